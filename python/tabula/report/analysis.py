"""The per-layer report as data: one row per IR op, the whole-model figures, the arena timeline, the
worst layers and the warnings (:mod:`.findings`); :mod:`.render` writes it as ``report.html`` /
``report.md`` and ``report.json`` is this dict.  No torch: everything comes from files a build leaves
(:func:`from_build`) or from the caller (:func:`build_report`, which ``tabula analyze`` calls).

Per row (IR op ``index``): ``op``; ``source`` (where the user wrote it: ``file.py:line`` or the module
path) and ``node`` (the FX node); ``inputs`` (the activation inputs' shapes); ``output`` with its
``shape``, ``dtype`` and grid (``scale``, ``zero_point``; per-channel scales as ``[min, max]``);
``macs`` (the op spec's); ``weight_bytes`` (its constant inputs); ``output_bytes``; ``emitted`` (the
index of the kernel call that computes it in ``model.c``: codegen fuses e.g. CONV2D + RESCALE into one)
with ``kernel``, ``path`` (the instruction set the kernel's build takes: ``Helium`` where the CPU has
MVE and the kernel a Helium path, ``DSP`` likewise, else ``portable``; a kernel's own cost rules may
still pick its portable loop for a shape, README "Speed per layer") and ``engine`` (``CPU``; ``NPU`` for
an op an NPU build runs on the Ethos-U, from ``results["npu"]``); ``instructions`` / ``ticks`` /
``share`` of that call (``profile=1``; on the row of the call's last IR op, the others ``fused``);
``sqnr_db`` / ``max_error_lsb`` / ``noise_power`` (:mod:`.layers`), ``grid_sqnr_db`` (what rounding the
float values onto the output grid alone gives: ``10 log10(12 rms^2 / scale^2)``), ``input_sqnr_db`` (of the
nearest tensor upstream that has one) and ``drop_db``; ``calibration`` (the grid against its calibration
values); ``table`` (a TABLE op's error bound); ``weight_sqnr_db`` (a weighted op's int8 weights
against its float weights).
"""
from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from pathlib import Path

__all__ = ["build_report", "from_build", "kernel_path", "ir_to_emitted", "arena_timeline", "WORST"]

#: How many of the lowest-SQNR layers the report highlights.
WORST = 3

#: Weighted IR ops (their weights are the second input).
WEIGHTED = ("CONV2D", "DEPTHWISE_CONV2D", "FULLY_CONNECTED", "MATMUL")

#: The instruction set a CPU gives the kernels (``__ARM_FEATURE_MVE`` / ``__ARM_FEATURE_DSP``).
_CPU_ISA = {"cortex-m55": "Helium", "cortex-m85": "Helium", "cortex-m4": "DSP", "cortex-m7": "DSP",
            "cortex-m33": "DSP", "cortex-m35p": "DSP"}


def _split_source(source: str) -> tuple[str, str]:
    """``"model.py:26 node conv2d"`` -> ``("model.py:26", "conv2d")``."""
    m = re.match(r"^(.*?)\s*node (\S+)$", source or "")
    if m:
        return (m.group(1) or "-"), m.group(2)
    return (source or "-"), ""


@lru_cache(maxsize=None)
def _kernel_isas(kernel: str) -> frozenset:
    """The ISA paths kernel ``kernel``'s source has (``MVE``, ``DSP``): its ``.c`` file and the headers of
    its folder it includes."""
    from .. import kernels

    try:
        k = next(k for k in kernels.load() if k.name == kernel)
    except StopIteration:
        return frozenset()
    src = Path(k.source)
    text = src.read_text(errors="replace")
    for inc in re.findall(r'#include "([^"]+)"', text):
        for folder in (src.parent, src.parent.parent):
            if (folder / inc).is_file():
                text += (folder / inc).read_text(errors="replace")
                break
    return frozenset(isa for isa, mark in (("MVE", "TABULA_HAVE_MVE"), ("DSP", "TABULA_HAVE_DSP")) if mark in text)


def kernel_path(kernel: str | None, cpu: str | None, portable: bool = False, cflags=()) -> str:
    """``Helium``, ``DSP`` or ``portable``: the path kernel ``kernel`` is built with for ``cpu`` (a
    board's ``cpu``; None or the host: portable), ``portable=1`` forcing the portable C; ``-`` for an op
    that calls no kernel."""
    if kernel is None:
        return "-"
    isa = None if portable or not cpu else _CPU_ISA.get(cpu)
    if isa == "DSP" and any("+nodsp" in f for f in cflags):
        isa = None
    if isa is None:
        return "portable"
    have = _kernel_isas(kernel)
    if isa == "Helium" and "MVE" in have:
        return "Helium"
    if isa == "DSP" and "DSP" in have:
        return "DSP"
    return "portable"


def ir_to_emitted(graph, emitted: list[dict]) -> list[int | None]:
    """For each IR op, the index of the emitted op (``src/ops.json``) that computes it: the one writing
    its output, or -- for an IR op codegen fused away (its output is an intermediate of a fused call) --
    the one writing the first tensor downstream that survives."""
    writer = {}
    for e in emitted:
        for name in e.get("outputs", []):
            writer[name] = e["index"]
    readers: dict[str, list[int]] = {}
    for i, op in enumerate(graph.ops):
        for n in op.inputs:
            readers.setdefault(n, []).append(i)
    out: list[int | None] = []
    for i, op in enumerate(graph.ops):
        name, seen, hit = op.outputs[0], set(), None
        while hit is None and name not in seen:
            seen.add(name)
            hit = writer.get(name)
            if hit is None:
                nxt = readers.get(name)
                if not nxt:
                    break
                name = graph.ops[nxt[0]].outputs[0]
        out.append(hit)
    return out


def arena_timeline(graph, emitted: list[dict], offsets: dict[str, int]) -> list[dict]:
    """Per emitted op: the arena tensors live while it runs (``name``, ``offset``, ``bytes``) and their
    total ``bytes``: a tensor is live from the op writing it (graph inputs: from the start) to its last
    reader (graph outputs: to the end), as the planner (:mod:`tabula.codegen.arena`) has it."""
    first: dict[str, int] = {n: -1 for n in graph.inputs}
    last: dict[str, int] = {}
    for e in emitted:
        i = e["index"]
        for n in e.get("outputs", []):
            first.setdefault(n, i)
            last.setdefault(n, i)
        for n in e.get("inputs", []):
            if n in graph.tensors and not graph.tensors[n].const:
                last[n] = i
    end = len(emitted)
    for n in graph.outputs:
        last[n] = end
    rows = []
    for e in emitted:
        i = e["index"]
        live = [n for n in first if n in graph.tensors and first[n] <= i <= last.get(n, first[n])]
        tensors = sorted(({"name": n, "offset": offsets.get(n), "bytes": graph.tensors[n].nbytes} for n in live),
                         key=lambda t: (t["offset"] if t["offset"] is not None else -1, t["name"]))
        rows.append({"index": i, "op": e["op"], "tensors": tensors, "bytes": sum(t["bytes"] for t in tensors)})
    return rows


def _grid(t) -> dict:
    if isinstance(t.scale, list):
        return {"scale": [min(t.scale), max(t.scale)], "per_channel": len(t.scale), "zero_point": int(t.zero_point)}
    return {"scale": t.scale, "per_channel": 0, "zero_point": int(t.zero_point)}


def _grid_sqnr(rms, scale) -> float | None:
    """The SQNR rounding values of RMS ``rms`` onto a grid of step ``scale`` gives (noise scale^2 / 12)."""
    if not rms or scale is None or isinstance(scale, list) or not scale:
        return None
    return round(10.0 * math.log10(12.0 * rms * rms / (float(scale) ** 2)), 2)


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def build_report(program, *, emitted: list[dict] | None = None, offsets: dict | None = None, arena: dict | None = None,
                 tables: list | None = None, calibration: dict | None = None, layers: dict | None = None,
                 weights: dict | None = None, results: dict | None = None, board=None, portable: bool = False,
                 title: str = "model", scheme: str | None = None, data_note: str = "") -> dict:
    """The report of ``program`` (a :class:`tabula.Program`) as a dict (module docstring): ``emitted``
    the codegen op list (``src/ops.json``), ``offsets`` / ``arena`` the arena plan (``src/arena.json``),
    ``tables`` the TABLE bounds (``tables.json``), ``calibration`` / ``layers`` / ``weights`` the
    figures of :mod:`.layers` (``calibration.json``, ``layers.json``), ``results`` a run's
    ``results.json``, ``board`` a :class:`tabula.boards.Board` (the CPU picks each kernel's path),
    ``portable`` the build's ``portable=1``; ``data_note`` says which samples the SQNR is over.  Every
    input may be missing: its columns are then empty."""
    from ..codegen.profile import macs as op_macs
    from .findings import findings

    g = program.graph
    emitted = emitted or []
    results = results or {}
    layers = layers or {}
    calibration = calibration or {}
    weights = weights or {}
    profile = results.get("profile") or []
    to_emitted = ir_to_emitted(g, emitted) if emitted else [None] * len(g.ops)
    cpu = getattr(board, "cpu", None) if board is not None else None
    cflags = tuple(getattr(board, "cflags", ()) or ()) if board is not None else ()
    npu_cpu, npu_ops = None, {}
    if results.get("npu"):  # an NPU build: every op's engine (and why a CPU one is)
        npu_cpu = {int(o["index"]) for o in results["npu"].get("cpu_ops", [])}
        npu_ops = {int(o["index"]): o for o in results["npu"].get("ops", [])}
    table_of = {t.get("output"): t for t in (tables or [])}
    producer = {}
    for i, op in enumerate(g.ops):
        for n in op.outputs:
            producer[n] = i

    def upstream_sqnr(name: str, seen=None):
        seen = seen or set()
        while name not in seen:
            seen.add(name)
            if name in layers and layers[name].get("sqnr_db") is not None:
                return layers[name]["sqnr_db"], name
            i = producer.get(name)
            if i is None:
                return None, None
            acts = [n for n in g.ops[i].inputs if not g.tensors[n].const]
            if not acts:
                return None, None
            name = acts[0]
        return None, None

    weighted_nodes = {_split_source(op.source)[1] for op in g.ops if op.op in WEIGHTED}
    rows = []
    for i, op in enumerate(g.ops):
        out = g.tensors[op.outputs[0]]
        where, node = _split_source(op.source)
        k = to_emitted[i]
        e = emitted[k] if k is not None and k < len(emitted) else None
        last_of_call = e is not None and op.outputs[0] in e.get("outputs", [])
        prof = profile[k] if k is not None and k < len(profile) and last_of_call else None
        acts = [n for n in op.inputs if not g.tensors[n].const]
        lay = layers.get(out.name) or {}
        in_sqnr, in_name = upstream_sqnr(acts[0]) if acts else (None, None)
        sq = lay.get("sqnr_db")
        row = {
            "index": i, "op": op.op, "source": where, "node": node,
            "inputs": [{"name": n, "shape": list(g.tensors[n].shape), "dtype": g.tensors[n].dtype} for n in acts],
            "output": out.name, "shape": list(out.shape), "dtype": out.dtype, **_grid(out),
            "macs": op_macs(op, g), "weight_bytes": sum(g.tensors[n].nbytes for n in op.inputs if g.tensors[n].const),
            "output_bytes": out.nbytes, "emitted": k, "kernel": e.get("kernel") if e else None,
            "fused": bool(e is not None and not last_of_call),
            "path": kernel_path(e.get("kernel"), cpu, portable, cflags) if e else "-",
            "engine": (str(npu_ops[i]["engine"]).upper() if i in npu_ops else
                       "CPU" if npu_cpu is None or i in npu_cpu else "NPU"),
            "engine_reason": (npu_ops.get(i) or {}).get("reason"),
            "instructions": prof.get("instructions") if prof else None, "ticks": prof.get("ticks") if prof else None,
            "share": prof.get("share") if prof else None,
            "float_node": lay.get("float_node"), "sqnr_db": sq, "max_error_lsb": lay.get("max_error_lsb"),
            "noise_power": lay.get("noise_power"), "grid_sqnr_db": _grid_sqnr(lay.get("rms"), out.scale),
            "input_sqnr_db": in_sqnr, "input_tensor": in_name,
            "drop_db": round(in_sqnr - sq, 2) if _finite(in_sqnr) and _finite(sq) else None,
            "calibration": calibration.get(out.name), "table": table_of.get(out.name),
            "test_range": ({k: lay[k] for k in ("clipped", "min", "max", "grid")} if lay.get("clipped") is not None else None),
            "weighted": node in weighted_nodes, "weight_sqnr_db": (weights.get(str(i)) or {}).get("weight_sqnr_db"),
            "worst": False,
        }
        rows.append(row)
    ranked = sorted((r for r in rows if _finite(r["sqnr_db"])), key=lambda r: (r["sqnr_db"], r["index"]))
    for r in ranked[:WORST]:
        r["worst"] = True
    groups = []
    for r in rows:
        if groups and groups[-1]["source"] == r["source"]:
            groups[-1]["ops"].append(r["index"])
        else:
            groups.append({"source": r["source"], "ops": [r["index"]]})
    act_dtype = next((g.tensors[n].dtype for n in g.inputs), None)
    model = {k: results.get(k) for k in (
        "board", "runner", "n_samples", "float_accuracy", "reference_accuracy", "device_accuracy", "bit_exact_mismatches",
        "sqnr_db_vs_float", "differ_from_float", "instructions_per_inference", "flash_bytes", "ram_bytes", "arena_bytes", "wall_seconds")
        if results.get(k) is not None}
    model.update({"ir_ops": len(g.ops), "emitted_ops": len(emitted) or None,
                  "macs": sum(r["macs"] for r in rows), "weight_bytes": sum(r["weight_bytes"] for r in rows),
                  "activation_dtype": act_dtype, "scheme": scheme or ("a16w8" if act_dtype == "int16" else "int8")})
    if arena:
        model["arena_bytes"] = arena.get("arena_bytes", model.get("arena_bytes"))
        model["live_set_lower_bound"] = arena.get("live_set_lower_bound")
        model["const_bytes"] = arena.get("const_bytes")
    rep = {
        "title": title, "board": getattr(board, "name", None) or results.get("board"), "cpu": cpu,
        "portable": bool(portable), "model": model, "rows": rows, "groups": groups,
        "worst": [r["index"] for r in ranked[:WORST]], "data_note": data_note,
        "timeline": arena_timeline(g, emitted, offsets or {}) if emitted else [],
        "metrics": results.get("metrics"), "first_divergence": results.get("first_divergence"),
        "tables": tables or [], "profile": bool(profile),
        "link": results.get("link"), "outputs": results.get("outputs"),
    }
    rep["warnings"] = findings(rep, g, results)
    return rep


def _read_json(path: Path):
    try:
        return json.loads(path.read_text()) if path.is_file() else None
    except (OSError, ValueError):
        return None


def from_build(out_dir, board=None, portable: bool = False, results: dict | None = None, ir_dir=None,
               src_dir=None) -> dict:
    """:func:`build_report` over a build folder ``out_dir`` (``ir.json``, ``tables.json``,
    ``calibration.json``, ``build.json`` in ``ir_dir``, default ``out_dir``; ``src/ops.json``,
    ``src/arena.json`` in ``src_dir``, default ``<ir_dir>/src``; ``layers.json``, ``results.json`` in
    ``out_dir``; each where present; ``results`` overrides the file).  ``board``: a board name or Board.

    Raises:
        MissingFileError, IRError: no readable IR in ``ir_dir``."""
    import tabula

    from ..boards import load_board

    out = Path(out_dir)
    ird = Path(ir_dir) if ir_dir is not None else out
    src = Path(src_dir) if src_dir is not None else ird / "src"
    program = tabula.load(ird)
    if isinstance(board, str):
        board = load_board(board)
    ops = _read_json(src / "ops.json") or {}
    arena = _read_json(src / "arena.json") or {}
    tables = (_read_json(ird / "tables.json") or {}).get("tables")
    calib = (_read_json(ird / "calibration.json") or {}).get("tensors")
    lay = _read_json(out / "layers.json") or {}
    res = results if results is not None else (_read_json(out / "results.json") or {})
    how = _read_json(ird / "build.json") or {}
    note = lay.get("note", "") if lay else "no test data run yet (run=1 computes the per-layer SQNR on it)"
    return build_report(program, emitted=ops.get("ops"), offsets=arena.get("offsets"), arena=arena, tables=tables,
                        calibration=calib, layers=lay.get("tensors"), weights=lay.get("weights"), results=res,
                        board=board, portable=portable or bool(how.get("portable")), title=out.resolve().name,
                        scheme=how.get("scheme"), data_note=note)
