"""``tabula`` command line: the toolchain's stages for scripting (SCons calls the same commands).

    tabula quantize --model m.pt2 --calib calib.npz --out build/dir      # quantized_graph.txt, ir.json, ir.npz
                    (--model m.tflite / m.onnx: imported first; several inputs: x0, x1, ... in the .npz)
    tabula codegen  --ir build/dir --out build/dir/src [--board B] [--profile]  # model.c, model.h (placed in B's memory)
    tabula float    --model m.pt2 --ir build/dir --data test.npz --out build/dir/float_outputs.npz  # the float model's outputs
                    (or tabula quantize ... --float-data test.npz --float-out F.npz --float-layers L.npz: both in one process)
    tabula run      --board corstone300 --elf fw.elf --ir build/dir --data test.npz (--float F.npz | --model m.pt2) --out build/dir
    tabula tosa     --ir build/dir --out build/dir/model.tosa           # the whole IR as a TOSA 1.0 flatbuffer
    tabula npu      --ir build/dir --npu ethos-u55-128 --board corstone300 --out build/dir/npu  # NPU/CPU plan (Vela)
    tabula analyze  --model m.pt2 --calib calib.npz [--data test.npz] [--scheme a16w8]  # report.html, no device
    tabula report   --ir build/dir --out build/dir --board B            # report.html / .md / .json of a build
    tabula debug    build/dir [--sample k]                              # the first op where device and reference part
    tabula show     build/dir/results.json
    tabula boards
    tabula validate --board mps2_an386 --model m.pt2 --data test.npz [--runner R] [--port P] [--probe ID] [--profile]

Errors a user can fix end in one ``tabula: error: ...`` line and exit code 2 (1 for a failed
validation: bit-exact mismatches or a device error); no traceback unless ``TABULA_DEBUG=1``.

Only ``quantize``, ``float``, ``analyze``, ``validate`` and ``run --model`` (without ``--float``) import torch;
``codegen``, ``tosa``, ``run --float``, ``report``, ``debug``, ``show``, ``boards`` and ``plots`` start in a fraction
of the time.  ``--quiet`` (and a stderr that is not a terminal) turns the progress bars off.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")


def _quiet_torch() -> None:
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    import torch  # noqa: F401  (torch configures its loggers on import; quiet them afterwards)

    for name in ("torch", "torch.utils._pytree", "torchao"):
        logging.getLogger(name).setLevel(logging.ERROR)


def _cmd_quantize(a) -> int:
    if a.float_data and not a.float_out:
        from .errors import StageError

        raise StageError("--float-data runs the float stage too: give --float-out (the float_outputs.npz to write)")
    _quiet_torch()
    from .stages import quantize_and_lower

    p = quantize_and_lower(a.model, a.calib, a.out, a.scheme, npu=a.npu or None, target_sqnr=a.target_sqnr,
                           budget=a.budget, precision=a.precision, board=a.cost_board or None)
    print(f"tabula: {len(p.graph.ops)} IR ops -> {a.out}/ir.json, ir.npz" + (f" (softmax in the NPU form for {a.npu})"
                                                                            if a.npu else ""))
    if a.float_data:  # the float stage too, in this process: torch and torchao are imported once per build
        from .stages import float_stage

        written = float_stage(a.model, a.out, a.float_data, a.float_out, limit=a.limit or None,
                              layers_path=a.float_layers or None)
        print(f"tabula: {written}")
    return 0


def _cmd_npu(a) -> int:
    """Partition the IR for an Ethos-U target, compile its NPU segments with Vela, write the plan
    (``--out``/plan.json and the segments' command streams and weights) and print what runs where."""
    import tabula
    from .npu import compile_npu
    from .report.npu import plan_lines

    plan = compile_npu(tabula.load(a.ir).graph, a.npu, a.board, a.out, model=a.name)
    for line in plan_lines(plan):
        print(f"tabula: {line}")
    return 0


def _cmd_codegen(a) -> int:
    from .stages import generate_sources

    r = generate_sources(a.ir, a.out, a.name, a.board or None, profile=a.profile, npu_plan=a.npu_plan or None,
                         npu_driver=a.npu_driver, debug=a.debug)
    print(f"tabula: {r.model_c} (arena {r.arena.size} bytes, constants {r.const_bytes} bytes)")
    for reg in (r.placement.regions if a.board else []):
        if reg["constants"] or reg["arena"]:
            print(f"tabula:   {reg['name']}: constants {reg['constants']} bytes, arena {reg['arena']} bytes "
                  f"(budget {reg['budget']} bytes)")
    return 0


def _cmd_tosa(a) -> int:
    """The IR of a build folder (or of the folder holding ``ir.json``; ``--ir`` may name ``ir.json``
    itself) as one TOSA 1.0.0 flatbuffer (:func:`tabula.tosa.serialize`), written atomically."""
    from pathlib import Path

    import tabula
    from . import tosa
    from .errors import StageError

    why = tosa.unavailable()
    if why:
        raise StageError(f"tabula tosa needs tosa-tools, a test extra (pip install -e '.[test]'): {why}")
    ir_dir = Path(a.ir)
    if ir_dir.name == "ir.json" and ir_dir.is_file():
        ir_dir = ir_dir.parent
    flatbuffer = tosa.serialize(tabula.load(ir_dir).graph)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_bytes(flatbuffer)
    tmp.replace(out)
    d = tosa.describe(flatbuffer)
    n_const = sum(o.startswith("CONST") for o in d["ops"])
    print(f"tabula: {out} (TOSA {'.'.join(map(str, d['version'][:3]))}, {len(d['ops']) - n_const} operators and "
          f"{n_const} constants, {len(flatbuffer)} bytes)")
    return 0


def _cmd_float(a) -> int:
    _quiet_torch()
    from .stages import float_stage

    print(f"tabula: {float_stage(a.model, a.ir, a.data, a.out, limit=a.limit or None, layers_path=a.layers or None)}")
    return 0


def _cmd_run(a) -> int:
    from .errors import StageError
    from .report import print_table
    from .stages import run_and_report

    if not a.model and not a.float:
        raise StageError("tabula run needs --float (the float outputs tabula float wrote) or --model (the .pt2)")
    if not a.float:
        _quiet_torch()
    res = run_and_report(a.elf, a.board, a.ir, a.data, a.model or a.float, a.out, runner=a.runner or None,
                         limit=a.limit or None, float_path=a.float or None, report=a.report, portable=a.portable)
    if not (a.quiet or a.no_table):
        print_table(res)
    _say_divergence(res)
    if res["bit_exact_mismatches"] or res["n_outputs_received"] != res["n_samples"]:
        print(
            f"tabula: error: device output differs from the integer reference in {res['bit_exact_mismatches']} "
            f"element(s) ({res['n_outputs_received']}/{res['n_samples']} samples received); see {a.out}/results.json",
            file=sys.stderr,
        )
        return 1
    return 0


def _cmd_report(a) -> int:
    """report.html / report.md / report.json of a build folder (its IR, codegen's files and, after a run,
    results.json); the warnings on the console."""
    from .report.stage import print_warnings

    rep, paths = _report_into(a)
    print_warnings(rep)
    print(f"tabula: {paths[0]} ({len(rep['rows'])} IR ops, {len(rep['warnings'])} warning(s))")
    return 0


def _report_into(a):
    from .report.analysis import from_build
    from .report.render import write_report

    rep = from_build(a.ir, a.board or None, a.portable, ir_dir=a.ir)  # results.json / layers.json: --ir's too
    return rep, write_report(rep, a.out)


def _cmd_analyze(a) -> int:
    """Quantize, lower and plan the C of a model and measure every layer against float: the report
    (build/<board>/<name>[-scheme]/report.html, or --out) without building or running anything."""
    from pathlib import Path

    from .files import check_folder_name, folder_name
    from .quantizer import SCHEME_NAMES

    if a.scheme not in SCHEME_NAMES:
        from .errors import StageError

        raise StageError(f"unknown --scheme {a.scheme}; choose one of {', '.join(SCHEME_NAMES)}")
    name = a.name or folder_name(Path(a.model).stem)
    check_folder_name(name, "--name ")
    out = a.out or str(Path(a.build_dir) / a.board / (name if a.scheme == "int8" else f"{name}-{a.scheme}"))
    _quiet_torch()
    from .report.stage import print_warnings
    from .stages import analyze_stage

    rep, paths = analyze_stage(a.model, a.calib, out, a.data or None, a.scheme, a.board, a.portable)
    print_warnings(rep)
    worst = ", ".join(f"op {i} {rep['rows'][i]['op']} {rep['rows'][i]['output']} {rep['rows'][i]['sqnr_db']:.1f} dB"
                      for i in rep["worst"])
    print(f"tabula: {paths[0]} ({len(rep['rows'])} IR ops{'; worst: ' + worst if worst else ''})")
    return 0


def _cmd_debug(a) -> int:
    """Run one sample of a build op by op on its (debug) firmware and name the first op whose output differs
    from the integer reference; exit 1 when one does."""
    from pathlib import Path

    import tabula
    from .deploy.debug import debug_firmware, divergence_line, first_divergence
    from .errors import StageError
    from .files import write_json
    from .stages import _load_npz_inputs, check_inputs, check_run_options

    out = Path(a.build)
    how = {}
    try:
        how = json.loads((out / "build.json").read_text())
    except (OSError, ValueError):
        pass
    res = {}
    try:
        res = json.loads((out / "results.json").read_text())
    except (OSError, ValueError):
        pass
    board_name = a.board or how.get("board") or res.get("board")
    if not board_name:
        raise StageError(f"{out} has no build.json or results.json naming its board; give --board")
    from .boards import load_board

    board = load_board(board_name)
    runner = check_run_options(board, a.runner or how.get("runner") or None, None, None, a.timeout)
    data = a.data or how.get("data")
    if not data:
        raise StageError(f"{out} has no build.json naming its test data; give --data")
    program = tabula.load(out)
    xs, _ = _load_npz_inputs(data, "test data")
    check_inputs(program, xs, data)
    x = xs[0]
    sample = a.sample if a.sample is not None else int(res.get("first_mismatch_sample") or 0)
    if not 0 <= sample < len(x):
        raise StageError(f"--sample {sample} is not a sample of {data} ({len(x)} samples: 0..{len(x) - 1})")
    elf, where = debug_firmware(out)
    ops = json.loads((where / "src" / "ops.json").read_text())["ops"]
    int_inputs = program.quantize_inputs(*(v[sample : sample + 1] for v in xs))
    d = first_divergence(elf, board.name, program, ops, int_inputs, sample, runner=runner, timeout_s=a.timeout,
                         log_path=out / "debug.log")
    write_json(out / "divergence.json", d)
    print(f"tabula: {divergence_line(d)}" + (f" ({elf})" if d.get("agree") else ""))
    return 0 if d.get("agree") else 1


def _say_divergence(res: dict) -> None:
    """The first-divergence line of a run whose device differed from the reference, on stderr."""
    if res.get("first_divergence"):
        from .deploy.debug import divergence_line

        print(f"tabula: {divergence_line(res['first_divergence'])}", file=sys.stderr)


def _cmd_plots(a) -> int:
    from .stages import plot_stage

    for path in plot_stage(a.ir, a.out):
        print(f"tabula: {path}")
    return 0


def _cmd_show(a) -> int:
    """Print a results.json (or a build folder's) as the report table; its structure is checked first
    (:func:`tabula.report.check_results`) and control characters in its text are escaped."""
    from .errors import MissingFileError, StageError
    from .files import shown
    from .report import check_results, print_table

    if os.path.isdir(a.results):  # a build folder: its results.json
        a.results = os.path.join(a.results, "results.json")
    path = shown(a.results)
    again = "run the board again (tabula run or scons) to rewrite it"
    try:
        with open(a.results, encoding="utf-8") as f:
            res = json.load(f)
    except FileNotFoundError:
        raise MissingFileError(f"{path} not found; tabula run (or scons) writes results.json") from None
    except RecursionError:
        raise StageError(f"{path} is not a readable results.json (nested too deeply to be tabula's); {again}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise StageError(f"{path} is not a readable results.json ({type(e).__name__}: {e}); {again}") from None
    if not isinstance(res, dict):
        raise StageError(f"{path} holds a JSON {type(res).__name__}, not tabula results; run the board again")
    try:
        check_results(res)
    except RecursionError:
        raise StageError(f"{path} is not tabula results (nested too deeply); {again}") from None
    except ValueError as e:
        raise StageError(f"{path} is not tabula results: {shown(e)}; {again}") from None
    print_table(res)
    return 0


def _cmd_boards(a) -> int:
    """List every board; a broken board.toml is named (with its fix) on stderr, the others are still
    listed, and the exit code is 2."""
    from .boards import list_boards, load_board
    from .errors import TabulaError

    status = 0
    for name in list_boards():
        try:
            b = load_board(name)
        except TabulaError as e:
            print(f"tabula: error: {e}", file=sys.stderr)
            status = 2
            continue
        runners = "/".join([b.default_runner] + [r for r in b.runner.get("prefer", []) if r != b.default_runner])
        print(f"{name:16s} {b.cpu:11s} {runners:9s} {b.description}")
    return status


def _cmd_validate(a) -> int:
    """Build (SCons, incremental) and run on the board, check every output bit-exact against the
    integer reference and against float, write results.json; exit 1 on any mismatch or device
    error (the results received so far are still in results.json).

    SCons reports through a status file (:mod:`tabula.status`): where it built (the firmware, the model
    and data it used) or the first stage's own error, which becomes this command's one line.  The
    build folder (``<build-dir>/<board>``) stays locked from the build through the run."""
    import tempfile
    from pathlib import Path

    from . import procs, status
    from .boards import load_board, repo_root
    from .deploy import SessionError
    from .errors import StageError
    from .files import LOCK_ENV, LOCK_NAME, check_build_dir, check_folder_name, lock_folder, make_dirs, shown
    from .report import print_table
    from .stages import check_run_options, run_and_report

    board = load_board(a.board)
    runner = check_run_options(board, a.runner or None, a.limit, a.port or None, a.timeout, probe=a.probe or None)
    if bool(a.model) != bool(a.data):
        raise StageError("--model and --data go together (or give neither for the digits example)")
    check_build_dir(a.build_dir, "--build-dir ")
    if a.name:
        check_folder_name(a.name, "--name ")
    if runner == "board":  # a missing probe is said in a second, not after the build
        from .deploy.runners.board import check_probe

        check_probe(board, a.probe or None)
    _quiet_torch()  # after the checks: a wrong option or a missing probe is said before torch loads
    build_dir = Path(a.build_dir).resolve()
    if a.model:
        model, data = str(Path(a.model).resolve()), str(Path(a.data).resolve())
        calib = str(Path(a.calib or a.data).resolve())
        args = [f"model={model}", f"calib={calib}", f"data={data}"] + ([f"name={a.name}"] if a.name else [])
    else:  # the digits example, as `scons board=...` does
        args = [f"name={a.name}"] if a.name else []
    if a.profile:  # SCons builds a profiling firmware into <name>-profile
        args.append("profile=1")
    board_dir = make_dirs(build_dir / board.name, "build folder", "--build-dir")
    lock = lock_folder(board_dir, "tabula validate --board " + board.name)
    try:
        with tempfile.TemporaryDirectory(prefix="tabula-validate-") as tmp:
            status_file = Path(tmp) / "status.jsonl"
            env = {**os.environ, status.STATUS_ENV: str(status_file),
                   LOCK_ENV: str((board_dir / LOCK_NAME).resolve())}
            cmd = [sys.executable, "-m", "SCons", "-Q", "-C", str(repo_root()), f"board={board.name}",
                   f"build_dir={build_dir}", "run=0", *args]
            built = procs.run(cmd, capture_output=True, text=True, env=env)
            records = status.read(status_file)
        failed = status.first_error(records)
        if built.returncode != 0 or failed is not None:
            if failed is not None:
                raise StageError(f"build failed: {failed['error']}")
            tail = [ln for ln in (built.stderr or "").splitlines() if ln.strip()][-2:]
            raise StageError(f"build failed (scons exit {built.returncode}, no stage said why): "
                             f"{shown(' | '.join(tail)) or 'no output'}")
        where = next((r for r in reversed(records) if r.get("stage") == "scons" and r.get("firmware")), None)
        if where is None:
            raise StageError("the build wrote no status record (is SConstruct from this checkout?); "
                             f"run scons board={board.name} yourself to see why")
        out, elf = Path(where["out"]), Path(where["firmware"])
        try:
            res = run_and_report(elf, board.name, out, where["data"], where["model"], out, runner=a.runner or None,
                                 limit=a.limit or None, port=a.port or None, timeout_s=a.timeout or None,
                                 probe=a.probe or None, report=True)
        except SessionError as e:
            print(f"tabula: error: {str(e).splitlines()[0]} (the outputs received are checked in "
                  f"{out / 'results.json'})", file=sys.stderr)
            return 1
    finally:
        if lock is not None:
            os.close(lock)
    if not a.quiet:
        print_table(res)
    _say_divergence(res)
    if res["bit_exact_mismatches"] or res["n_outputs_received"] != res["n_samples"]:
        print(f"tabula: error: device output differs from the integer reference in "
              f"{res['bit_exact_mismatches']} element(s) ({res['n_outputs_received']}/"
              f"{res['n_samples']} samples received); see {out / 'results.json'}", file=sys.stderr)
        return 1
    return 0


def _add_validate(sub) -> None:
    v = sub.add_parser("validate", help="build, run on a board (host, qemu, fvp or a real one), "
                                        "check bit-exact and against float, write results.json")
    v.add_argument("--board", required=True)
    v.add_argument("--model", default="", help=".pt2, float .tflite or .onnx (default: the digits example)")
    v.add_argument("--data", default="", help="test inputs .npz (x, optional labels y)")
    v.add_argument("--calib", default="", help="calibration .npz (default: --data)")
    v.add_argument("--name", default="")
    v.add_argument("--runner", default="", help="override the board's runner (host, qemu, fvp, board)")
    v.add_argument("--port", default="", help="serial port or pyserial URL of a real board")
    v.add_argument("--probe", default="", help="debug probe of a real board: its unique id (pyocd list); "
                                               "default: the one connected")
    v.add_argument("--limit", type=int, default=0)
    v.add_argument("--timeout", type=float, default=None, help="seconds per wait (default: the runner's)")
    v.add_argument("--build-dir", default="build")
    v.add_argument("--quiet", action="store_true")
    v.add_argument("--profile", action="store_true", help="time every op on the device (SysTick around each kernel "
                                                          "call): results.json 'profile' and the report list them")
    v.set_defaults(fn=_cmd_validate)


def build_parser() -> argparse.ArgumentParser:
    from .quantizer.schemes import SCHEME_NAMES  # torch-free

    ap = argparse.ArgumentParser(prog="tabula", description="PyTorch model -> bare-metal Arm firmware, checked bit-exact")
    sub = ap.add_subparsers(dest="cmd", required=True)
    q = sub.add_parser("quantize", help="PT2E-quantize a model (.pt2, float .tflite, .onnx) and lower it to the integer IR")
    q.add_argument("--model", required=True)
    q.add_argument("--calib", required=True)
    q.add_argument("--scheme", default="int8", choices=SCHEME_NAMES, help="int8, a16w8, or mixed (int8 / int16 per layer)")
    q.add_argument("--target-sqnr", type=float, default=None,
                   help="scheme mixed: the output SQNR (dB vs float, calibration data) to reach")
    q.add_argument("--budget", type=float, default=None,
                   help="scheme mixed: the instructions per inference to stay within (the board's cost model)")
    q.add_argument("--precision", default="", help="per-layer overrides, e.g. classifier=a16w8,features.0=int8 "
                                                    "(module paths or layer names)")
    q.add_argument("--cost-board", default="", help="scheme mixed: whose instruction cost model (default corstone300)")
    q.add_argument("--out", required=True)
    q.add_argument("--npu", default="", help="an Ethos-U target (ethos-u55-128, ...): lower the softmax in its NPU form")
    q.add_argument("--float-data", default="", help="also run the float stage (tabula float) on this test data, in "
                                                     "this process (SCons: torch imported once per build)")
    q.add_argument("--float-out", default="", help="with --float-data: the float outputs file (float_outputs.npz)")
    q.add_argument("--float-layers", default="", help="with --float-data: the float activations file (float_layers.npz)")
    q.add_argument("--limit", type=int, default=0, help="with --float-data: the first N test samples (0 = all)")
    q.add_argument("--quiet", action="store_true", help="no progress bars")
    q.set_defaults(fn=_cmd_quantize)
    n = sub.add_parser("npu", help="partition the IR for an Ethos-U, compile its NPU segments with Vela, write the plan")
    n.add_argument("--ir", required=True, help="the build folder holding ir.json and ir.npz")
    n.add_argument("--npu", required=True, help="the target: ethos-u55-32/64/128/256, ethos-u65-256/512, ethos-u85-256")
    n.add_argument("--board", required=True, help="the board (its board.toml [npu]: regions, memory mode)")
    n.add_argument("--out", required=True, help="the folder for plan.json and the segments' files (build/.../npu)")
    n.add_argument("--name", default="model")
    n.set_defaults(fn=_cmd_npu)
    c = sub.add_parser("codegen", help="render model.c/model.h from a saved IR")
    c.add_argument("--ir", required=True)
    c.add_argument("--out", required=True)
    c.add_argument("--name", default="model")
    c.add_argument("--board", default="", help="place constants and arena in this board's memory regions")
    c.add_argument("--profile", action="store_true", help="time every op on the device (src/profile.json lists them)")
    c.add_argument("--npu-plan", default="", help="an NPU build: the folder of tabula npu's plan.json")
    c.add_argument("--npu-driver", default="ethosu", choices=("ethosu", "standin"),
                   help="ethosu: Arm's core driver; standin: the test-only stand-in (runs each segment on the CPU)")
    c.add_argument("--debug", action="store_true", help="the firmware returns each op's output on request (TENSOR: "
                                                       "tabula debug, first-divergence reports)")
    c.set_defaults(fn=_cmd_codegen)
    r = sub.add_parser("run", help="run firmware on a board, check bit-exact, write results.json")
    r.add_argument("--board", required=True)
    r.add_argument("--elf", required=True)
    r.add_argument("--ir", required=True)
    r.add_argument("--data", required=True)
    r.add_argument("--model", default="", help="the float .pt2 (run here, with torch) unless --float is given")
    r.add_argument("--float", default="", help="the float model's outputs from tabula float (no torch)")
    r.add_argument("--out", required=True)
    r.add_argument("--runner", default="")
    r.add_argument("--limit", type=int, default=0)
    r.add_argument("--quiet", action="store_true", help="do not print the table, and no progress bar")
    r.add_argument("--no-table", action="store_true", help="do not print the table (SCons prints it with tabula show)")
    r.add_argument("--report", action="store_true", help="also write report.html / report.md / report.json into --out")
    r.add_argument("--portable", action="store_true", help="the firmware was built with portable=1 (for the report)")
    r.set_defaults(fn=_cmd_run)
    rp = sub.add_parser("report", help="report.html / report.md / report.json of a build folder (no torch)")
    rp.add_argument("--ir", required=True, help="the build folder (ir.json, src/, results.json, ...)")
    rp.add_argument("--out", required=True, help="where to write the report (usually the build folder)")
    rp.add_argument("--board", default="", help="the board it was built for (its CPU picks each kernel's path)")
    rp.add_argument("--portable", action="store_true", help="the build forced the portable kernels")
    rp.add_argument("--quiet", action="store_true", help="no progress bars")
    rp.set_defaults(fn=_cmd_report)
    an = sub.add_parser("analyze", help="quantize a model and report every layer against float (no device)")
    an.add_argument("--model", required=True, help="the float .pt2 (torch.export.save)")
    an.add_argument("--calib", required=True, help="calibration inputs .npz (x)")
    an.add_argument("--data", default="", help="test inputs .npz (x, optional y); default: the calibration inputs")
    an.add_argument("--scheme", default="int8", choices=SCHEME_NAMES, help="int8, a16w8, or mixed (int8 / int16 per layer, the default target)")
    an.add_argument("--board", default="corstone300", help="the board whose kernels the report names (default corstone300)")
    an.add_argument("--portable", action="store_true", help="as if built with portable=1")
    an.add_argument("--name", default="", help="the build folder's name (default: the model file's)")
    an.add_argument("--build-dir", default="build")
    an.add_argument("--out", default="", help="the folder to write (default: <build-dir>/<board>/<name>[-<scheme>])")
    an.add_argument("--quiet", action="store_true", help="no progress bars")
    an.set_defaults(fn=_cmd_analyze)
    d = sub.add_parser("debug", help="the first op where device and reference part (builds a debug firmware if needed)")
    d.add_argument("build", help="the build folder (build/<board>/<name>)")
    d.add_argument("--sample", type=int, default=None, help="the test sample (default: the first that differed, else 0)")
    d.add_argument("--data", default="", help="test inputs .npz (default: the build's)")
    d.add_argument("--board", default="", help="default: the build's")
    d.add_argument("--runner", default="")
    d.add_argument("--timeout", type=float, default=None, help="seconds per wait (default: the runner's)")
    d.add_argument("--quiet", action="store_true", help="no progress bars")
    d.set_defaults(fn=_cmd_debug)
    t = sub.add_parser("tosa", help="write the IR as a TOSA 1.0 flatbuffer (for the TOSA reference model and Vela)")
    t.add_argument("--ir", required=True, help="a build folder, or the folder holding ir.json and ir.npz")
    t.add_argument("--out", required=True, help="the .tosa file to write")
    t.set_defaults(fn=_cmd_tosa)
    f = sub.add_parser("float", help="the float model's outputs on the test data, for tabula run --float")
    f.add_argument("--model", required=True)
    f.add_argument("--ir", required=True)
    f.add_argument("--data", required=True)
    f.add_argument("--out", required=True)
    f.add_argument("--limit", type=int, default=0)
    f.add_argument("--layers", default="", help="also write the float activations of the first samples here "
                                                "(float_layers.npz, beside --out: the run stage's per-layer SQNR)")
    f.add_argument("--quiet", action="store_true", help="no progress bars")
    f.set_defaults(fn=_cmd_float)
    pl = sub.add_parser("plots", help="one PNG per TABLE op: f, the dequantized table, the error in LSB")
    pl.add_argument("--ir", required=True)
    pl.add_argument("--out", required=True)
    pl.set_defaults(fn=_cmd_plots)
    s = sub.add_parser("show", help="print a results.json as a table")
    s.add_argument("results")
    s.set_defaults(fn=_cmd_show)
    b = sub.add_parser("boards", help="list the boards")
    b.set_defaults(fn=_cmd_boards)
    _add_validate(sub)
    return ap


def main(argv: list[str] | None = None) -> int:
    """Run one ``tabula`` command; returns its exit code (0 ok, 2 a problem the user can fix, 1 a failed
    validation or device).  A failure is also recorded in ``$TABULA_STATUS`` when set (:mod:`tabula.status`)."""
    args = build_parser().parse_args(argv)
    from . import status
    from .errors import TabulaError

    debug = bool(os.environ.get("TABULA_DEBUG"))
    if getattr(args, "quiet", False):  # no progress bars here nor in what this command starts
        from .progress import QUIET_ENV

        os.environ[QUIET_ENV] = "1"
    try:
        return args.fn(args)
    except TabulaError as e:  # every error tabula raises on purpose: one line, its exit code
        if debug:
            raise
        print(f"tabula: error: {e}", file=sys.stderr)
        status.record(args.cmd, error=str(e), exit_code=e.exit_code)
        return e.exit_code
    except (OSError, ValueError, TypeError, RecursionError) as e:  # a library's own check (torch, numpy), a full disk
        if debug:
            raise
        msg = f"{type(e).__name__}: {e} (set TABULA_DEBUG=1 for the traceback)"
        print(f"tabula: error: {msg}", file=sys.stderr)
        status.record(args.cmd, error=msg, exit_code=2)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
