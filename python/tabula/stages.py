"""The toolchain's stages as plain functions over files; SCons builders and the CLI call these.

Each stage reads files and writes files under ``build/<board>/<model>/`` so every intermediate can
be opened:  ``quantized_graph.txt``, ``ir.json`` + ``ir.npz``, ``src/model.c`` + ``src/model.h``,
``firmware.elf``, ``run.log``, ``results.json``.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from .errors import StageError
from .files import shown

os.environ.setdefault("OMP_NUM_THREADS", "1")


def _load_npz_x(path: str | Path, what: str) -> tuple[np.ndarray, np.ndarray | None]:
    """``x`` (float32 [n, ...]) and the optional labels ``y`` of a single-input ``.npz``
    (:func:`_load_npz_inputs` with exactly one input)."""
    xs, y = _load_npz_inputs(path, what)
    if len(xs) != 1:
        raise StageError(f"{what} file {Path(path)} holds {len(xs)} inputs (x0..x{len(xs) - 1}); this step takes one ('x')")
    return xs[0], y


def _load_npz_inputs(path: str | Path, what: str) -> tuple[list[np.ndarray], np.ndarray | None]:
    """The inputs (one float32 array ``[n, ...]`` per model input) and the optional labels ``y`` (int64
    [n]) of a ``.npz``: ``x`` for a single-input model, or ``x0``, ``x1``, ... (consecutive from 0, the
    model's input order) for several.

    Raises:
        StageError: naming the file: missing, not a ``.npz`` archive (a ``.npy``, text, truncated),
            no ``x`` / ``x0``, both, a gap in ``x0..xK``, inputs with different sample counts,
            complex / non-numeric / NaN / Inf / empty inputs, labels that are not one non-negative
            integer per sample.
    """
    p = Path(path)
    if not p.is_file():
        raise StageError(f"{what} file {p} not found")
    fix = "save it with np.savez(path, x=inputs, y=labels) (several inputs: x0=..., x1=...)"
    try:
        z = np.load(p, allow_pickle=False)
    except Exception as e:  # numpy/zipfile raise many kinds for a damaged or foreign file
        raise StageError(f"{what} file {p} is not a readable .npz archive ({type(e).__name__}: {e}); {fix}") from None
    if not hasattr(z, "files"):
        raise StageError(f"{what} file {p} holds a single array (a .npy), not a .npz archive; {fix}")
    try:
        with z:
            files = set(z.files)
            numbered = sorted(int(k[1:]) for k in files if k[:1] == "x" and k[1:].isdigit())
            if "x" in files and numbered:
                raise StageError(f"{what} file {p} has both 'x' and 'x0'..; give 'x' (one input) or x0, x1, ... (several)")
            if "x" in files:
                keys = ["x"]
            elif numbered:
                if numbered != list(range(len(numbered))):
                    raise StageError(f"{what} file {p} has inputs {['x%d' % k for k in numbered]}: number them "
                                     "x0, x1, ... without gaps, in the model's input order")
                keys = [f"x{k}" for k in numbered]
            else:
                raise StageError(f"{what} file {p} has no array 'x' (it has {z.files}); save inputs as "
                                 "np.savez(path, x=...) (several inputs: x0=..., x1=...)")
            xs = [z[k] for k in keys]
            y = z["y"] if "y" in files else None
    except StageError:
        raise
    except Exception as e:  # a truncated member, a pickled object array
        raise StageError(f"{what} file {p} is damaged or holds objects ({type(e).__name__}: {e}); {fix}") from None
    out = []
    for key, x in zip(keys, xs):
        name = f"'{key}'"
        if np.iscomplexobj(x):
            raise StageError(f"{what} file {p}: {name} is complex ({x.dtype}); the model takes real inputs: save x.real "
                             "(or split real and imaginary parts into channels)")
        if x.dtype.kind not in "fiub":
            raise StageError(f"{what} file {p}: {name} has dtype {x.dtype}; save float32 numbers")
        x = x.astype(np.float32)
        if not np.isfinite(x).all():
            raise StageError(f"{what} file {p}: {name} contains NaN or Inf")
        if x.ndim < 1 or x.shape[0] == 0:
            raise StageError(f"{what} file {p}: {name} holds no samples (shape {x.shape}); give at least one")
        if out and len(x) != len(out[0]):
            raise StageError(f"{what} file {p}: {name} has {len(x)} samples, {keys[0]!r} {len(out[0])}; give every "
                             "input the same number of samples")
        out.append(x)
    if y is not None:
        n = len(out[0])
        if y.ndim != 1 or len(y) != n:
            raise StageError(f"{what} file {p}: 'y' has {y.shape} labels for {n} samples; give one integer label per sample")
        if y.dtype.kind == "f" and not (np.isfinite(y).all() and (y == np.round(y)).all()):
            raise StageError(f"{what} file {p}: labels 'y' are fractional floats ({y.dtype}); give the class index of "
                             "each sample as an integer (y.argmax(1) for one-hot or probabilities)")
        if y.dtype.kind not in "fiub":
            raise StageError(f"{what} file {p}: labels 'y' have dtype {y.dtype}; give integer class indices")
        y = y.astype(np.int64)
        if (y < 0).any():
            raise StageError(f"{what} file {p}: label {int(y.min())} is negative; labels are class indices 0..classes-1")
    return out, y


def check_run_options(board, runner: str | None = None, limit: int | None = None, port: str | None = None,
                      timeout_s: float | None = None, probe: str | None = None) -> str:
    """Check the options of a run before anything is built or started; returns the runner's name.

    Raises:
        StageError: ``limit`` < 0, ``timeout_s`` <= 0 or not finite, an unknown ``runner`` or one the
            board's ``board.toml`` has no ``[runner.<name>]`` table for (``fvp`` for the host build), or a
            ``port`` or ``probe`` for a runner other than ``board`` (it would be ignored).
    """
    import math

    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 0):
        raise StageError(f"limit {limit!r} must be a whole number >= 0 (0 or none = every test sample)")
    if timeout_s is not None and not (isinstance(timeout_s, (int, float)) and math.isfinite(timeout_s) and timeout_s > 0):
        raise StageError(f"timeout {timeout_s!r} must be a number of seconds > 0 (leave it out for the runner's default)")
    name = board.pick_runner(runner)
    from tabula.deploy.runners import available_runners

    if name not in available_runners():
        raise StageError(f"unknown runner {name!r}; the runners are {', '.join(available_runners())}")
    tables = getattr(board, "runner", None)
    known = sorted(k for k, v in tables.items() if isinstance(v, dict)) if isinstance(tables, dict) else []
    if runner and known and name not in known:
        raise StageError(f"runner {name} cannot run {board.name}'s firmware: boards/{board.name}/board.toml names "
                         f"{', '.join(known)}; drop runner=, or pick a board built for {name} (tabula boards)")
    for what, value in (("port", port), ("probe", probe)):
        if value and name != "board":
            raise StageError(f"a {what} ({value}) is for a real board (runner board), but {board.name} runs on {name}; "
                             f"drop the {what}, or pick a dev board (tabula boards)")
    return name


EXPORT_FIX = "torch.export.save(torch.export.export(model.eval(), (x[:1],)), '{p}')"


def saved_with_torch_save(path: str | Path) -> bool:
    """Whether ``path`` is a ``torch.save`` file (a pickled module, state_dict or tensor: a zip with
    ``data.pkl`` and no ``torch.export`` program in it, or a bare pickle) rather than a
    ``torch.export.save`` archive."""
    import zipfile

    p = Path(path)
    try:
        if zipfile.is_zipfile(p):
            with zipfile.ZipFile(p) as z:
                names = z.namelist()
            exported = any(n.endswith(("serialized_exported_program.json", "archive_format")) or "/models/" in n
                           for n in names)
            return not exported and any(n.endswith("data.pkl") for n in names)
        with open(p, "rb") as f:
            head = f.read(2)
        return len(head) == 2 and head[0] == 0x80 and 2 <= head[1] <= 5  # a pickle's PROTO opcode
    except OSError:
        return False


def load_exported(model_path: str | Path):
    """Load the model at ``model_path`` as a ``torch.export`` program: a ``.pt2``, a float ``.tflite`` or
    an ``.onnx`` file (:func:`tabula.importers.load_program`: batch-1 example inputs, 4-D NCHW).

    Raises:
        StageError: naming the file: missing; a ``.pt2`` that is a ``torch.save`` file (a pickled module
            or state_dict, not an exported program: the message gives the ``torch.export.save`` line) or no
            readable ``torch.export`` program (one line, with torch's first line of why); a ``.tflite`` /
            ``.onnx`` whose reader or converter is not installed (the line gives the install command) or
            that the importer does not convert (the line names the op).
    """
    import torch

    p = Path(model_path)
    if not p.is_file():
        raise StageError(f"model file {p} not found; export it with {EXPORT_FIX.format(p=p)} (or give a float "
                         ".tflite or an .onnx file)")
    if p.suffix.lower() in (".tflite", ".onnx"):
        from .importers import load_program

        try:
            return load_program(p)
        except ImportError as e:
            raise StageError(str(e)) from None
        except (ValueError, OSError) as e:  # TFLiteImportError / ONNXImportError are ValueErrors
            msg = str(e)
            raise StageError(msg if p.name in msg else f"{p}: {msg}") from None
    if saved_with_torch_save(p):
        raise StageError(f"{p} was written by torch.save (a pickled module or state_dict), not by torch.export.save: "
                         f"tabula reads exported programs; export it with {EXPORT_FIX.format(p=p)}")
    try:
        return torch.export.load(str(p))
    except Exception as e:  # torch raises many types for a bad archive
        why = next((ln.strip() for ln in str(e).splitlines() if ln.strip() and "warnings above" not in ln), "")
        raise StageError(f"cannot load {p} as a torch.export program (.pt2): {type(e).__name__}"
                         f"{': ' + why if why else ''}; export it again with {EXPORT_FIX.format(p=p)}") from None


def parse_precision(text: str | None) -> dict[str, str]:
    """``"classifier=a16w8,features.0=int8"`` (SCons ``precision=``, ``--precision``) as a dict; empty
    text: ``{}``.  StageError for an entry that is not ``key=scheme``, or a key given twice with two schemes."""
    out: dict[str, str] = {}
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        key, eq, value = part.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise StageError(f"precision entry {part!r} is not <module or layer>=<int8|a16w8>, e.g. "
                             "precision=classifier=a16w8,features.0=int8")
        key, value = key.strip(), value.strip()
        if out.get(key, value) != value:
            raise StageError(f"precision names {key} twice ({out[key]}, then {value}); give each module or layer "
                             "once")
        out[key] = value
    return out


def quantize_and_lower(model_path, calib_path, out_dir, scheme: str = "int8", npu: str | None = None,
                       target_sqnr: float | None = None, budget: float | None = None, precision: str | dict | None = None,
                       board: str | None = None):
    """Stage 1+2: the model (``.pt2`` / ``.tflite`` / ``.onnx``, :func:`load_exported`) + calibration
    ``.npz`` (``x``, or ``x0``, ``x1``, ... for several inputs: float32 [n, ...] each) ->
    ``quantized_graph.txt``, ``ir.json``, ``ir.npz``, ``tables.json`` (each TABLE's error bound) and
    ``calibration.json`` (each activation grid against the float values the calibration gives it:
    :mod:`tabula.report.stage`) in ``out_dir``.  Returns the :class:`tabula.Program`.  ``npu``: an Ethos-U
    target: the IR takes the NPU forms of its lowerings (:func:`tabula.npu.legalize`: the softmax without
    INTDIV); ``tables.json`` then also says which form each softmax has.  ``scheme="mixed"`` (with
    ``target_sqnr`` / ``budget``, and ``board`` for the cost model): prints the per-layer choice and writes it
    to ``precision.json`` (:class:`tabula.quantizer.mixed.Choice`); ``precision``: per-layer overrides (a
    dict, or :func:`parse_precision`'s text), any scheme.  A ``precision.json`` of an earlier mixed build is
    removed otherwise.

    Raises:
        StageError: the model or calibration is unreadable, the model was exported with a batch
            other than 1, the calibration's inputs are not the model's (count or per-sample shape),
            ``target_sqnr`` / ``budget`` without ``scheme="mixed"``, or a ``precision`` entry that is
            not ``key=scheme`` or names no layer.
    """
    import torch

    import tabula

    from .files import make_dirs

    ep = load_exported(model_path)
    out = make_dirs(out_dir)
    xs, _ = _load_npz_inputs(calib_path, "calibration")
    example = tuple(ep.example_inputs[0]) if ep.example_inputs else tuple(torch.from_numpy(x[:1]) for x in xs)
    if len(example) != len(xs):
        have = "'x'" if len(xs) == 1 else f"x0..x{len(xs) - 1}"
        want = "'x'" if len(example) == 1 else f"x0..x{len(example) - 1}"
        raise StageError(f"the model takes {len(example)} input(s) but {calib_path} holds {len(xs)} ({have}); save "
                         f"{want} in the model's input order")
    for k, (e, x) in enumerate(zip(example, xs)):
        if e.dim() and int(e.shape[0]) != 1:
            raise StageError(
                f"{model_path} was exported with batch {int(e.shape[0])} (example input shape "
                f"{tuple(e.shape)}); the device runs one sample per inference: export with a batch-1 "
                "example input, e.g. torch.export.export(model, (x[:1],))"
            )
        if tuple(e.shape[1:]) != tuple(x.shape[1:]):
            which = "" if len(xs) == 1 else f" of input {k} (x{k})"
            raise StageError(
                f"calibration samples{which} have shape {x.shape[1:]} but the model expects {tuple(e.shape[1:])} per sample"
            )
    if len(xs) == 1:
        calib = torch.from_numpy(xs[0])
    else:
        calib = [tuple(torch.from_numpy(x[i : i + 1]) for x in xs) for i in range(len(xs[0]))]
    overrides = parse_precision(precision) if isinstance(precision, str) or precision is None else dict(precision)
    mixed = {}
    if scheme == "mixed":
        mixed = dict(target_sqnr=target_sqnr, budget=budget, board=board, report=lambda c: print(c.table()))
    elif target_sqnr is not None or budget is not None:
        raise StageError(f"target_sqnr= and budget= choose the precision per layer: give them with scheme=mixed "
                         f"(scheme={scheme} has one precision)")
    try:
        gm = tabula.quantize(ep, example, calib, scheme=scheme, precision=overrides or None, **mixed)
    except ValueError as e:
        if "precision" not in str(e) and "target_sqnr" not in str(e) and "budget" not in str(e):
            raise
        raise StageError(str(e)) from None
    from tabula.files import write_atomic, write_json

    choice = gm.meta.get("tabula_precision")
    if choice is not None:
        write_json(out / "precision.json", choice.to_json())
    else:
        (out / "precision.json").unlink(missing_ok=True)

    write_atomic(out / "quantized_graph.txt", gm.code)
    program = tabula.lower(gm, example)
    kept = []
    if npu:
        from tabula.npu import legalize

        graph, kept = legalize(program.graph, npu)
        program = type(program)(graph)
    program.save(out)
    for line in kept:
        print(f"tabula: note: {line}")
    from tabula.report import write_results
    from tabula.report.tables import table_report

    # compile-time error bound of every TABLE op, over every input code
    write_results(out / "tables.json", {"tables": table_report(program.graph)})
    from tabula.report.stage import calibration_file

    calibration_file(program, ep, xs, out / "calibration.json")
    return program


def generate_sources(ir_dir, src_dir, model_name: str = "model", board: str | None = None, profile: bool = False,
                     npu_plan=None, npu_driver: str = "ethosu", debug: bool = False):
    """Stage 3: ``ir.json``/``ir.npz`` -> ``model.c``/``model.h`` and ``arena.json`` (the arena plan
    and, with a ``board``, where its ``[memory]`` regions hold constants and arena) in ``src_dir``.
    ``profile``: the firmware times every op (:func:`tabula.codegen.generate`) and ``profile.json`` lists
    the ops (index, op, kernel, shape, macs, source) for the run stage's ``results.json`` ``profile``;
    without it a ``profile.json`` left from an earlier build is removed.  ``npu_plan``: an NPU build's plan
    folder (``tabula npu``): each NPU segment becomes an ``ethosu_invoke_v3`` call (:mod:`tabula.codegen.npu`);
    ``npu_driver="standin"`` adds the test-only driver stand-in's segment bodies.  ``debug``: the firmware
    answers TENSOR requests (each op's output on demand: docs/protocol.md; ``tabula debug``).  Every build
    writes ``ops.json``: the emitted ops (index, op, kernel, shape, MACs, source, input and output tensors),
    which the report and the TENSOR requests read.

    Raises:
        StageError: inputs/outputs too big for a protocol frame, or the model does not fit the
            board's memory (one line: region, bytes needed, budget).
    """
    import tabula
    from tabula.boards import load_board
    from tabula.codegen import generate

    from tabula.deploy.protocol import MAX_PAYLOAD

    program = tabula.load(ir_dir)
    g = program.graph
    in_total = sum(g.tensors[n].nbytes for n in g.inputs)
    out_total = sum(g.tensors[n].nbytes for n in g.outputs)
    if in_total > MAX_PAYLOAD or out_total + 8 + (4 + 4 * len(g.ops) if profile else 0) > MAX_PAYLOAD:
        raise StageError(
            f"the model's inputs ({in_total} bytes) or outputs ({out_total} bytes) do not fit one protocol frame "
            f"({MAX_PAYLOAD} bytes of payload, outputs 8 fewer); use smaller inputs/outputs or split the model"
        )
    memory = None
    if board:
        try:
            memory = load_board(board).memory
        except ValueError as e:
            raise StageError(str(e)) from e
    npu = None
    if npu_plan:
        from tabula.codegen.npu import NpuCodegen
        from tabula.npu.plan import load_plan

        if memory is None:
            raise StageError("an NPU build needs the board (--board): its [npu] regions hold the weights and scratch")
        npu = NpuCodegen(load_plan(npu_plan), Path(npu_plan), standin=npu_driver == "standin")
    from .files import make_dirs

    make_dirs(src_dir)
    res = generate(g, src_dir, model_name, memory, profile=profile, npu=npu, debug=debug)
    prof = Path(src_dir) / "profile.json"
    from .files import write_json

    if profile:
        write_json(prof, {"ops": res.ops})
    else:
        prof.unlink(missing_ok=True)
    write_json(Path(src_dir) / "ops.json", {"debug": bool(debug), "ops": res.emitted})
    info = {"arena_bytes": res.arena.size, "live_set_lower_bound": res.arena.lower_bound,
            "const_bytes": res.const_bytes, "offsets": res.arena.offsets}
    if memory is not None:
        info["memory"] = {"board": board, **res.placement.to_json()}
    if npu is not None:
        info["npu_driver"] = npu_driver
    write_json(Path(src_dir) / "arena.json", info)   # sorted keys: the same plan is the same bytes
    return res


def elf_sizes(elf_path) -> dict:
    """``flash_bytes`` (allocated sections with contents: code, rodata, .data's load image) and
    ``ram_bytes`` (allocated writable sections: .data, .bss incl. the arena, and the reserved stack) of
    an ELF.  A ``.heap`` section is the linker's "rest of RAM" reserve, not a requirement: excluded."""
    from elftools.elf.constants import SH_FLAGS
    from elftools.elf.elffile import ELFFile

    flash = ram = 0
    with open(elf_path, "rb") as f:
        for s in ELFFile(f).iter_sections():
            flags = s["sh_flags"]
            if not flags & SH_FLAGS.SHF_ALLOC or "heap" in s.name:
                continue
            if s["sh_type"] != "SHT_NOBITS":
                flash += s["sh_size"]
            if flags & SH_FLAGS.SHF_WRITE:
                ram += s["sh_size"]
    return {"flash_bytes": int(flash), "ram_bytes": int(ram)}


def region_usage(elf_path, memory_map) -> dict[str, int]:
    """Bytes of the ELF's allocated sections (code, rodata, .data, .bss, the stack; not the
    ``.heap`` reserve) in each region of ``memory_map`` (a :class:`tabula.memory.MemoryMap`)."""
    from elftools.elf.constants import SH_FLAGS
    from elftools.elf.elffile import ELFFile

    used = {r.name: 0 for r in memory_map.regions}
    with open(elf_path, "rb") as f:
        for s in ELFFile(f).iter_sections():
            if not s["sh_flags"] & SH_FLAGS.SHF_ALLOC or "heap" in s.name or not s["sh_size"]:
                continue
            r = memory_map.locate(s["sh_addr"])
            if r is not None:
                used[r.name] += int(s["sh_size"])
    return used


def memory_report(elf_path, board) -> list | None:
    """``results.json``'s ``memory``: one entry per region of the board (board.toml [memory]
    order): ``region``, ``origin``, ``length``, what codegen placed there (``constants``,
    ``n_constants``, ``arena``: bytes; ``budget``: the length less what the runtime keeps there)
    and, for a linked ELF, the bytes ``used`` (sections by address, the stack included, the heap
    reserve not).  None when codegen ran without the board (no placement in ``src/arena.json``)."""
    p = Path(elf_path).parent / "src" / "arena.json"
    placed = json.loads(p.read_text()).get("memory") if p.is_file() else None
    if not placed or board.memory is None:
        return None
    used = region_usage(elf_path, board.memory) if board.toolchain == "arm_gnu" and Path(elf_path).is_file() else {}
    return [{"region": r["name"], **{k: r[k] for k in ("origin", "length", "budget", "constants", "n_constants", "arena")},
             **({"npu": r["npu"]} if "npu" in r else {}), "used": used.get(r["name"])} for r in placed["regions"]]


def run_and_report(elf_path, board_name: str, ir_dir, data_path, model_path, out_dir,
                   runner: str | None = None, limit: int | None = None,
                   port: str | None = None, timeout_s: float | None = None, float_path=None,
                   probe: str | None = None, report: bool = False, portable: bool = False,
                   debug_build: bool = True) -> dict:
    """Stage 5+6: run every sample of ``data_path`` on the board, check bit-exact against the
    integer reference, compare with float, write ``results.json`` and print a table.

    A model with several outputs gets, per output, its mismatches and SQNR vs float under
    ``outputs`` (index, IR name, shape); the headline ``bit_exact_mismatches`` is their sum,
    ``sqnr_db_vs_float`` the lowest, and the accuracies are those of the first output.

    The same on every runner (host, qemu, fvp, board): ``runner`` overrides the board's choice,
    ``port`` is the serial port of a real board, ``probe`` its debug probe (pyocd unique id). ``float_path``: the float model's outputs from
    :func:`float_stage` (then torch is not imported and ``model_path`` only names the model in
    messages); None: run ``model_path`` here. When the session fails (timeout, reset, closed
    link, bad status) the outputs received so far are still checked and written to
    ``results.json`` with an ``error`` entry, and the SessionError is raised again.  Figures that
    would be silently meaningless get a ``warnings`` entry (:func:`data_warnings`), printed in the report.
    ``metrics``: per output the validation metrics of the device against float and against the reference
    (:func:`tabula.report.metrics.output_metrics`).  When the device differs from the reference, the first
    failing sample (``first_mismatch_sample``) is run again op by op on a debug firmware -- this one if it
    was built with ``debug=1``, else (``debug_build``) the same model built so into ``<out>/debug`` -- and
    ``first_divergence`` names the first op that differs (:mod:`tabula.deploy.debug`).  ``report``: also
    write ``report.html`` / ``report.md`` / ``report.json`` into ``out_dir`` (``portable``: the build's
    ``portable=1``, for the kernel paths) and add the report's warnings to ``warnings``.

    Raises:
        StageError: bad options (:func:`check_run_options`), unreadable or mismatched test data,
            labels outside the model's classes, a float model that is not this program's network
            (it fails on the data or its outputs have another shape); before anything runs.
        IRError: a damaged ``ir.json`` / ``ir.npz``.
        SessionError: the run failed (after ``results.json`` is written).
    """
    import tabula
    from tabula.boards import load_board
    from tabula.deploy import SessionError, run_on_board
    from tabula.report import accuracy, sqnr_db, write_results

    out = Path(out_dir)
    board = load_board(board_name)
    runner_name = check_run_options(board, runner, limit, port, timeout_s, probe)
    program = tabula.load(ir_dir)
    xs, y = _load_npz_inputs(data_path, "test data")
    check_inputs(program, xs, data_path)
    if limit:
        xs, y = [x[:limit] for x in xs], (y[:limit] if y is not None else None)
    x = xs[0]
    n_classes = int(np.prod(program.graph.tensors[program.graph.outputs[0]].shape[1:], dtype=np.int64))
    if y is not None and len(y) and int(y.max()) >= n_classes:
        raise StageError(f"test data {data_path}: label {int(y.max())} is not a class of the model's "
                         f"{n_classes} outputs; labels are class indices 0..{n_classes - 1}")
    if float_path is not None:  # the float model's outputs, computed earlier (tabula float): no torch here
        float_out = read_float_outputs(float_path, xs, len(program.graph.outputs))
    else:
        ep = load_exported(model_path)  # before the run: a wrong file fails in a second, not after it

    # Integer inputs and the golden outputs, sample by sample (batch 1 like the device); for the first
    # samples every intermediate too, against the float stage's activations (the report's per-layer SQNR)
    from tabula.reference.interpreter import run_graph
    from tabula.report.stage import read_float_layers

    if float_path is not None:
        float_layers = read_float_layers(Path(float_path).with_name("float_layers.npz"))
    elif report:  # torch is here already (the float model runs in this process): its activations too
        from tabula.report.stage import float_layers_file

        from .files import make_dirs as _make_dirs

        float_layers_file(program, ep, xs, _make_dirs(out) / "float_layers.npz", _digest)
        float_layers = read_float_layers(out / "float_layers.npz")
    else:
        float_layers = None
    if float_layers is not None and float_layers["data_sha256"] != _digest([v[: float_layers["n"]] for v in xs]):
        float_layers = None  # made for other samples
    n_traced = float_layers["n"] if float_layers is not None else 0
    int_inputs = [program.quantize_inputs(*(v[i : i + 1] for v in xs)) for i in range(len(x))]
    traces: list[dict] = [{} for _ in range(min(n_traced, len(x)))]
    ref_outputs = [run_graph(program.graph, xi, trace=traces[i]) if i < len(traces) else program.run_int(*xi)
                   for i, xi in enumerate(int_inputs)]
    payloads = [b"".join(a.tobytes() for a in xi) for xi in int_inputs]

    from .files import make_dirs

    make_dirs(out)
    t0 = time.monotonic()
    error = None
    try:
        session = run_on_board(elf_path, board_name, payloads, runner=runner_name,
                               log_path=out / "run.log", port=port, timeout_s=timeout_s, probe=probe)
    except SessionError as e:
        session, error = e.partial, e
    wall_s = time.monotonic() - t0

    n_out = len(program.graph.outputs)
    mismatches = [0] * n_out  # per model output
    dev_outputs = []
    for i, outs in enumerate(session.outputs):
        dev = [np.frombuffer(b, dtype=r.dtype).reshape(r.shape) for b, r in zip(outs, ref_outputs[i])]
        dev_outputs.append(dev)
        for k, (d, r) in enumerate(zip(dev, ref_outputs[i])):
            mismatches[k] += int((d != r).sum())
    n_dev = len(dev_outputs)

    if float_path is None:
        float_out = run_float(ep, model_path, xs, n_out)
    ref_deq = [program.dequantize_outputs(r) for r in ref_outputs]
    ref_float = [np.concatenate([r[k] for r in ref_deq]) for k in range(n_out)]
    for k in range(n_out):
        if float_out[k].shape != ref_float[k].shape:
            raise StageError(f"the float model {model_path} gives outputs of shape {float_out[k].shape[1:]} per sample, "
                             f"the program {ref_float[k].shape[1:]}: give the .pt2 that was quantized")
    dev_deq = [program.dequantize_outputs(d) for d in dev_outputs]
    dev_float = [np.concatenate([d[k] for d in dev_deq]) if n_dev else np.zeros((0,) + ref_float[k].shape[1:], np.float32)
                 for k in range(n_out)]
    # an index (argmax) or mask (a comparison) output is a count of elements that differ from the float
    # model's, not an SQNR: its codes are the values themselves
    discrete = [f.dtype.kind in "biu" for f in float_out]
    sqnr = [None if d else sqnr_db(f, r) for f, r, d in zip(float_out, ref_float, discrete)]
    differ = [int((f != r.astype(f.dtype)).sum()) if d else None for f, r, d in zip(float_out, ref_float, discrete)]

    ticks = np.asarray(session.ticks, dtype=np.float64)
    tick_hz = session.tick_hz or 0
    icount_shift = board.runner.get("qemu", {}).get("icount_shift") if runner_name == "qemu" else None
    instructions = None
    if tick_hz and icount_shift is not None and len(ticks):
        # QEMU -icount shift=N runs one instruction every 2^N ns of virtual time.
        instructions = float(ticks.mean()) * 1e9 / tick_hz / (2**icount_shift)

    results = {
        "board": board_name,
        "runner": runner_name,
        "n_samples": int(len(x)),
        "n_outputs_received": n_dev,
        "float_accuracy": accuracy(float_out[0], y),
        "reference_accuracy": accuracy(ref_float[0], y),
        "device_accuracy": accuracy(dev_float[0], y[:n_dev] if y is not None else None) if n_dev else None,
        "bit_exact_mismatches": int(sum(mismatches)),
        "output_elements": int(sum(r.size for ro in ref_outputs for r in ro)),
        "sqnr_db_vs_float": _worst([v for v, d in zip(sqnr, discrete) if not d]),
        "instructions_per_inference": None if instructions is None else round(instructions),
        "ticks_per_inference": float(ticks.mean()) if len(ticks) else None,
        "tick_hz": tick_hz,
        "arena_bytes": _arena_bytes(elf_path),
        **elf_sizes(elf_path),
        "tables": _tables(ir_dir),
        "precision": _precision(ir_dir),
        "memory": memory_report(elf_path, board),
        "device_exit_code": session.exit_code,
        "rejected_frames": session.n_rejected_frames,
        "resends": session.n_resends,
        "link": session.link_stats(),
        "wall_seconds": round(wall_s, 2),
    }
    prof = profile_report(elf_path, session.op_ticks, float(ticks.mean()) if len(ticks) else None,
                          instructions, tick_hz)
    if prof is not None:
        results["profile"] = prof
    npu = npu_report(elf_path, prof)
    if npu is not None:
        results["npu"] = npu
    if n_out > 1:  # every output its own figures; a single-output report keeps its form
        results["outputs"] = [
            {"index": k, "name": name, "shape": list(float_out[k].shape[1:]), "bit_exact_mismatches": mismatches[k],
             "output_elements": int(sum(ro[k].size for ro in ref_outputs)), "sqnr_db_vs_float": sqnr[k],
             **({"differ_from_float": differ[k]} if discrete[k] else {})}
            for k, name in enumerate(program.graph.outputs)
        ]
    elif discrete[0]:
        results["differ_from_float"] = differ[0]
    warnings = data_warnings(program, int_inputs, results["sqnr_db_vs_float"], model_path, xs)
    if warnings:
        results["warnings"] = warnings
    if error is not None:
        results["error"] = str(error).splitlines()[0]
    from tabula.report.metrics import output_metrics

    if n_dev:
        results["metrics"] = output_metrics(dev_float, ref_float, float_out, y, list(program.graph.outputs))
    if results["bit_exact_mismatches"]:
        first = next(i for i, dev in enumerate(dev_outputs) if any((d != r).any() for d, r in zip(dev, ref_outputs[i])))
        results["first_mismatch_sample"] = first
        results["first_divergence"] = (
            {"sample": first, "why": "an NPU build's segments cannot be read op by op: build the model without npu= "
                                     "(scons ... debug=1) to compare its CPU kernels, or run it on the FVP"}
            if npu is not None else
            _divergence(elf_path, board_name, program, out, int_inputs[first], first, runner_name, timeout_s, port,
                        probe, debug_build))
    if float_layers is not None:
        from tabula.files import write_json
        from tabula.report.stage import layers_from_run

        write_json(out / "layers.json", layers_from_run(program, float_layers, traces))
    if report:
        from tabula.report.stage import build_folder_report

        write_results(out / "results.json", results)
        try:
            rep, _ = build_folder_report(out, board, portable, results, ir_dir, Path(elf_path).parent / "src")
        except (OSError, ValueError, KeyError, TypeError, ImportError) as e:  # the run's figures stand without it
            rep = {"warnings": []}
            results["report_error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            print(f"tabula: warning: report.html not written ({results['report_error']})", file=sys.stderr)
        extra = [w for w in rep["warnings"] if w["kind"] != "data"]
        if extra:  # printed by tabula show with the data warnings; "findings" keeps their kind and layer
            results["warnings"] = list(results.get("warnings") or []) + [w["text"] for w in extra]
            results["findings"] = extra
    write_results(out / "results.json", results)
    if error is not None:
        raise error
    return results


def npu_report(elf_path, profile: list | None) -> dict | None:
    """``results.json``'s ``npu`` for an NPU build (``<elf dir>/npu/plan.json`` exists; None otherwise):
    the plan's partition and Vela figures with the device's instructions per segment
    (:func:`tabula.report.npu.npu_results`)."""
    d = Path(elf_path).parent
    if not (d / "npu" / "plan.json").is_file():
        return None
    from tabula.npu.plan import load_plan
    from tabula.report.npu import npu_results

    arena = d / "src" / "arena.json"
    driver = json.loads(arena.read_text()).get("npu_driver", "ethosu") if arena.is_file() else "ethosu"
    return npu_results(load_plan(d / "npu"), profile, driver)


def _divergence(elf_path, board_name, program, out: Path, int_inputs, sample: int, runner, timeout_s, port, probe,
                build: bool) -> dict:
    """``results.json``'s ``first_divergence`` for the first failing ``sample`` (see :func:`run_and_report`):
    the first op that differs, ``{"sample", "agree": True}``, or ``{"sample", "why"}`` when it could not be
    found (no debug firmware, the debug run failed)."""
    from tabula.deploy import SessionError
    from tabula.deploy.debug import debug_firmware, first_divergence
    from tabula.errors import TabulaError

    cmd = f"tabula debug {shown(out)} --sample {sample}"
    try:
        ops_json = json.loads((Path(elf_path).parent / "src" / "ops.json").read_text())
        is_debug = bool(ops_json.get("debug"))
    except (OSError, ValueError):
        is_debug = False
    if not is_debug and not build:
        return {"sample": sample, "why": f"the firmware was built without debug=1; {cmd} finds the first op that differs"}
    try:
        print(f"tabula: the device differs from the reference on sample {sample}: "
              f"{'reading every op' if is_debug else 'building a debug firmware to read every op'}", file=sys.stderr)
        elf, where = (Path(elf_path), Path(elf_path).parent) if is_debug else debug_firmware(out)
        ops = json.loads((where / "src" / "ops.json").read_text())["ops"]
        return first_divergence(elf, board_name, program, ops, int_inputs, sample, runner=runner, timeout_s=timeout_s,
                                port=port, probe=probe, log_path=out / "debug.log")
    except (TabulaError, SessionError, OSError, ValueError, KeyError) as e:
        return {"sample": sample, "why": f"{str(e).splitlines()[0] if str(e) else type(e).__name__} ({cmd} tries again)"}


def profile_report(elf_path, op_ticks: list, ticks_per_inference: float | None, instructions: float | None,
                   tick_hz: int) -> list[dict] | None:
    """``results.json`` ``profile`` of a profiling firmware (``profile=1``; None otherwise): per op of
    ``<elf dir>/src/profile.json`` (codegen's op list), ``{op, kernel, shape, macs, ticks,
    instructions, instr_per_mac, share}`` with ``ticks`` the mean over the samples of the device's
    per-op ticks (``op_ticks``: per sample, per op), ``instructions`` the ticks converted as the
    inference's are (None where the runner does not count instructions, e.g. the host: ticks are ns
    there), ``instr_per_mac`` for ops with MACs, ``share`` of the inference's ticks.

    Raises:
        StageError: the device sent another number of ops than ``profile.json`` lists (the ELF and the
            sources are from different builds)."""
    p = Path(elf_path).parent / "src" / "profile.json"
    if not op_ticks or not p.is_file():
        return None
    ops = json.loads(p.read_text())["ops"]
    per_op = np.asarray(op_ticks, dtype=np.float64)
    if per_op.ndim != 2 or per_op.shape[1] != len(ops):
        raise StageError(f"the firmware timed {per_op.shape[-1]} ops but {p} lists {len(ops)}: the ELF and its sources "
                         "are from different builds; rebuild (scons profile=1)")
    mean = per_op.mean(axis=0)
    to_instr = None if not instructions or not ticks_per_inference else instructions / ticks_per_inference
    out = []
    for o, t in zip(ops, mean):
        n = None if to_instr is None else round(float(t) * to_instr)
        out.append({"op": o["op"], "kernel": o["kernel"], "shape": o["shape"], "macs": o["macs"],
                    "ticks": round(float(t), 1), "instructions": n,
                    "instr_per_mac": None if n is None or not o["macs"] else round(n / o["macs"], 3),
                    "share": round(float(t) / ticks_per_inference, 4) if ticks_per_inference else None,
                    "source": o.get("source", "")})
    return out


def check_inputs(program, xs: list[np.ndarray], data_path) -> None:
    """StageError unless ``xs`` (one array ``[n, ...]`` per input, PyTorch layout) are the program's
    inputs: their count and each sample's shape."""
    names = program.graph.inputs
    if len(xs) != len(names):
        have = "'x'" if len(xs) == 1 else f"x0..x{len(xs) - 1}"
        raise StageError(f"test data {data_path}: {len(xs)} input(s) ({have}), the model takes {len(names)}; save "
                         + ("'x'" if len(names) == 1 else f"x0..x{len(names) - 1}") + " in the model's input order")
    for k, (name, x) in enumerate(zip(names, xs)):
        want = tuple(program.graph.tensors[name].shape)
        if program.graph.io_layout.get(name) == "NCHW":
            want = (want[0], want[3], want[1], want[2])
        if tuple(x.shape[1:]) != want[1:]:
            which = "" if len(xs) == 1 else f" of input {k} (x{k})"
            raise StageError(f"test data {data_path}: samples{which} of shape {tuple(x.shape[1:])}, the model expects "
                             f"{want[1:]}")


def run_float(ep, model_path, xs, n_out: int) -> list[np.ndarray]:
    """Every output of the float model (a loaded program, ``ep``) on each sample of the inputs ``xs`` (one
    array ``[n, ...]`` per model input, or one array for a single input; batch 1, as the device runs), in
    the program's output order: ``n_out`` float arrays ``[n, ...]``.

    Raises:
        StageError: the model does not run on the inputs or returns another number of tensors than ``n_out``."""
    if isinstance(xs, np.ndarray):
        xs = [xs]
    import torch

    from .progress import iterate

    fmod = ep.module(check_guards=False)
    try:
        with torch.no_grad():  # every output of the float model, in the order the program has them
            float_runs = [_tensor_leaves(fmod(*(torch.from_numpy(v[i : i + 1]) for v in xs)))
                          for i in iterate(range(len(xs[0])), "float model", "sample")]
    except Exception as e:  # torch's own shape/guard errors: a model that is not this program's network
        raise StageError(f"the float model {model_path} does not run on the test data ({type(e).__name__}: "
                         f"{str(e).splitlines()[0] if str(e) else ''}); give the .pt2 that was quantized") from None
    if any(len(f) != n_out for f in float_runs):
        raise StageError(f"the float model returns {len(float_runs[0])} tensors, the program {n_out} outputs; "
                         "re-export the model and quantize it again")
    return [np.concatenate([f[k] for f in float_runs]) for k in range(n_out)]


def _digest(xs) -> str:
    """SHA-256 of the test inputs (an array, or one per model input) and their shapes."""
    import hashlib

    h = hashlib.sha256()
    for x in ([xs] if isinstance(xs, np.ndarray) else xs):
        h.update(np.ascontiguousarray(x).tobytes() + str(x.shape).encode())
    return h.hexdigest()


def float_stage(model_path, ir_dir, data_path, out_path, limit: int | None = None, layers_path=None) -> Path:
    """The float model's outputs on the test data, once, into ``out_path`` (``.npz``: ``out_<k>`` per
    program output, float ``[n, ...]``, and ``data_sha256`` of the samples they belong to), so the run
    stage compares with float without importing torch (``tabula float``; SCons runs it beside the
    firmware build).  ``limit``: the first ``limit`` samples only.  ``layers_path``: also write there
    the float model's activations of the first samples (``float_layers.npz``,
    :func:`tabula.report.stage.float_layers_file`), which the run stage compares with the reference's
    intermediates: the report's per-layer SQNR.

    Raises:
        StageError: unreadable test data or model, or a float model that does not run on the data or
            has another number of outputs than the program (``ir_dir``)."""
    import tabula

    program = tabula.load(ir_dir)
    xs, _ = _load_npz_inputs(data_path, "test data")
    check_inputs(program, xs, data_path)
    if limit:
        xs = [x[:limit] for x in xs]
    from .files import make_dirs

    ep = load_exported(model_path)
    outs = run_float(ep, model_path, xs, len(program.graph.outputs))
    out = Path(out_path)
    make_dirs(out.parent)
    with out.open("wb") as f:
        np.savez(f, data_sha256=np.array(_digest(xs)), **{f"out_{k}": o for k, o in enumerate(outs)})
    if layers_path is not None:
        from tabula.report.stage import float_layers_file

        float_layers_file(program, ep, xs, layers_path, _digest)
    return out


def read_float_outputs(path, xs, n_out: int) -> list[np.ndarray]:
    """The float outputs :func:`float_stage` wrote, for the samples ``xs`` (an array, or one per input).

    Raises:
        StageError: the file is missing or unreadable, was made for other samples (``limit`` or data
            changed) or holds another number of outputs: make it again with ``tabula float``."""
    p = Path(path)
    fix = f"make it again: tabula float --model M.pt2 --ir IR_DIR --data DATA.npz --out {p}"
    try:
        with np.load(p, allow_pickle=False) as z:
            digest = str(z["data_sha256"])
            outs = [np.asarray(z[f"out_{k}"]) for k in range(n_out)]
            extra = f"out_{n_out}" in z.files
    except FileNotFoundError:
        raise StageError(f"float outputs {p} not found; {fix}") from None
    except (OSError, KeyError, ValueError) as e:
        raise StageError(f"float outputs {p} are not readable or lack an output ({type(e).__name__}: {e}); {fix}") from None
    if extra:
        raise StageError(f"float outputs {p} hold more outputs than the program's {n_out}; {fix}")
    if digest != _digest(xs):
        raise StageError(f"float outputs {p} belong to other test samples (data or limit changed); {fix}")
    return outs


def data_warnings(program, int_inputs: list[list[np.ndarray]], sqnr: float | None, model_path,
                  float_inputs: list[np.ndarray] | None = None) -> list[str]:
    """Warnings for a run whose figures are silently meaningless (``results.json`` ``warnings``, printed
    in the report): test inputs that mostly saturate the input grid or collapse onto a few codes (the
    calibration did not look like the test data: all zeros, wrong units, x1e30), and a program that
    is further from the float model than zero output is (SQNR < 0 dB: the float model is another
    network, or the quantization failed).  ``float_inputs`` (one array per model input, PyTorch layout),
    when given, decide saturation: a value saturates when it lies more than half an LSB outside the
    grid's real range (a value exactly at an end, like a black pixel at 0, does not); without them, a
    code at either end counts."""
    from tabula import dtypes

    out = []
    for k, name in enumerate(program.graph.inputs):
        t = program.graph.tensors[name]
        lo, hi = t.qrange or dtypes.range_of(t.dtype)
        q = np.concatenate([xi[k].reshape(-1) for xi in int_inputs])
        if float_inputs is not None and k < len(float_inputs):
            xf = np.asarray(float_inputs[k], dtype=np.float64).reshape(-1)
            s_, zp = float(t.scale), int(t.zero_point)
            beyond = (xf < (lo - zp - 0.5) * s_) | (xf > (hi - zp + 0.5) * s_)
            sat = float(beyond.mean()) if xf.size else 0.0
        else:
            sat = float(((q == lo) | (q == hi)).mean()) if q.size else 0.0
        codes = int(np.unique(q).size)
        if codes <= 2 and q.size > 2:
            out.append(f"input {name!r} takes only {codes} integer code(s) over the test data (scale {t.scale:.3g}): "
                       "the calibration range is far wider than the test data's (or the test data is constant); "
                       "calibrate on inputs like the test data")
        elif sat > 0.5:
            out.append(f"{sat:.0%} of input {name!r} values saturate the input grid (scale {t.scale:.3g}): the "
                       "calibration data did not cover the test data's range; calibrate on inputs like the test data")
    if sqnr is not None and sqnr < 0:
        out.append(f"SQNR vs float is {sqnr:.1f} dB (< 0: the program is further from the float model than zero "
                   f"output): is {model_path} the network that was quantized, and is the calibration right?")
    return out


def _tensor_leaves(value) -> list[np.ndarray]:
    """The tensors of a model's (possibly nested) output, in ``torch.export``'s flattening order --
    the order of the program's outputs."""
    import torch

    return [v.detach().numpy() for v in torch.utils._pytree.tree_leaves(value) if isinstance(v, torch.Tensor)]


def _worst(values: list) -> float | None:
    """The lowest SQNR of several outputs (None if any is None, or with none: a model whose outputs are all
    indices or masks): the headline figure of a multi-output model; each output's own is under ``outputs``."""
    return None if not values or any(v is None for v in values) else min(values)


def _precision(ir_dir) -> dict | None:
    """The mixed scheme's per-layer choice of the build (``precision.json``), or None."""
    p = Path(ir_dir) / "precision.json"
    return json.loads(p.read_text()) if p.is_file() else None


def _tables(ir_dir) -> list | None:
    p = Path(ir_dir) / "tables.json"
    return json.loads(p.read_text())["tables"] if p.is_file() else None


def plot_stage(ir_dir, out_dir) -> list[Path]:
    """Write one PNG per TABLE op (f, the dequantized table, the error in LSB) into ``out_dir``."""
    import tabula
    from tabula.report.tables import plot_tables

    from .files import make_dirs

    graph = tabula.load(ir_dir).graph
    return plot_tables(graph, make_dirs(out_dir))


def _arena_bytes(elf_path) -> int | None:
    p = Path(elf_path).parent / "src" / "arena.json"
    return json.loads(p.read_text())["arena_bytes"] if p.is_file() else None


def analyze_stage(model_path, calib_path, out_dir, data_path=None, scheme: str = "int8", board: str = "corstone300",
                  portable: bool = False) -> tuple[dict, list[Path]]:
    """``tabula analyze``: quantize ``model_path`` (a ``.pt2``) on ``calib_path``, lower it, plan its C for
    ``board`` (no compiler, no device), measure every layer against float on ``data_path`` (default: the
    calibration inputs) and every grid against the calibration, and write the report into ``out_dir``
    (with the IR, ``tables.json``, ``calibration.json``, ``layers.json`` and ``src/``).  Returns the report
    and the paths written.

    Raises:
        StageError: unreadable model or data, data of another shape than the model's input, an unknown board.
        UnsupportedOpError, QuantizationError: as ``tabula quantize``."""
    from .boards import load_board
    from .files import make_dirs, write_json
    from .report.analysis import from_build
    from .report.render import write_report
    from .report.stage import analyze_layers, float_model

    try:
        b = load_board(board)
    except ValueError as e:
        raise StageError(str(e)) from e
    out = make_dirs(out_dir)
    program = quantize_and_lower(model_path, calib_path, out, scheme)  # also writes calibration.json
    xs, _ = _load_npz_inputs(data_path or calib_path, "test data" if data_path else "calibration")
    check_inputs(program, xs, data_path or calib_path)
    ep = load_exported(model_path)
    data = analyze_layers(program, float_model(ep, xs), xs)
    if not data_path:
        data["note"] = f"per-layer SQNR over the {len(xs[0])} calibration sample(s) (give --data for test data)"
    write_json(out / "layers.json", data)
    generate_sources(out, out / "src", Path(out).name, b.name)
    write_json(out / "build.json", {"board": b.name, "scheme": scheme, "portable": bool(portable), "analyze": True})
    rep = from_build(out, b, portable, results={})
    return rep, write_report(rep, out)
