"""The NPU plan of one build: partition, Vela compiles and the figures, written as files codegen and the
report read (``<build>/npu/``):

* ``plan.json`` -- the target and its configuration (:mod:`tabula.npu.config`), every op (``engine``,
  ``reason`` for a CPU op, its ``segment``), every segment (its ops, its inputs and outputs with the
  base-pointer ``region`` and byte ``offset`` Vela gave them, and for an NPU segment Vela's figures:
  ``cycles``, ``time_s`` at the configuration's clock, ``sram_bytes``, ``flash_bytes`` (off-chip flash or
  DRAM: the weights' memory), ``macs``, the sizes of its command stream, weights and scratch, and the
  per-layer rows mapped to IR ops), the totals, and the softmax forms;
* ``seg<k>.tosa``, ``seg<k>.cmd.bin`` (Vela's ``cmd_data``, with its ``COP1`` header), ``seg<k>.weights.bin``
  and ``seg<k>.vela.log`` per NPU segment.

Everything is a pure function of the IR, the target and the board: the same inputs give the same files.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import StageError
from ..files import write_atomic, write_json
from ..ir import Graph
from ..tosa import serialize
from .compile import CompiledSegment, compile_segments
from .config import NpuConfig
from .legalize_softmax_pass import softmax_forms
from .partition import NPU, mark, subgraph
from .vela import PINNED_VERSION

__all__ = ["build_plan", "load_plan", "PLAN_VERSION"]

#: ``plan.json``'s format version.
PLAN_VERSION = 1
_KIB = 1024


def _io_entries(g: Graph, names: list[str], vela_io: list[dict], what: str, k: int) -> list[dict]:
    if len(names) != len(vela_io):
        raise StageError(f"NPU segment {k}: Vela reports {len(vela_io)} {what}s, the segment has {len(names)}")
    out = []
    for n, v in zip(names, vela_io):
        t = g.tensors[n]
        numel = 1
        for d in v["shape"]:
            numel *= int(d)
        if numel != t.numel or v["elem_size"] != t.itemsize:
            raise StageError(f"NPU segment {k}: Vela's {what} {len(out)} is {v['shape']} x {v['elem_size']} B, tabula's "
                             f"{n} is {list(t.shape)} {t.dtype}: the orders differ")
        out.append({"name": n, "bytes": t.nbytes, "region": v["region"], "offset": v["offset"]})
    return out


def _layers(g: Graph, cs: CompiledSegment) -> list[dict]:
    by_tosa = cs.tosa_names or {}
    producer = {n: i for i in cs.segment.ops for n in g.ops[i].outputs}
    rows = []
    known = sorted(by_tosa, key=len, reverse=True)
    for row in cs.vela.layers:
        name = row["name"].split("/")[0]  # Vela's decompositions: "layer-3/lut"; its copies: "input-0_copy"
        ir = by_tosa.get(name) or next((by_tosa[k] for k in known if name.startswith(k)), None)
        rows.append({"op": row["op"], "npu_op": row["npu_op"], "cycles": row["cycles"], "macs": row["macs"],
                     "ir_op": producer.get(ir), "tensor": ir})
    return rows


def build_plan(g: Graph, config: NpuConfig, out_dir: str | Path, model: str = "model", compiler=None) -> dict:
    """Partition ``g`` for ``config``'s target, compile its NPU segments with Vela, write ``out_dir``'s files
    (module docstring) and return the plan (``plan.json``'s content).  ``compiler``: the Vela runner
    (:func:`tabula.npu.vela.compile_tosa`; a test may pass another).

    Raises:
        tabula.npu.vela.VelaMissing: ethos-u-vela is not installed.
        StageError: Vela crashed, or reported inputs / outputs that do not match the segment's.
    """
    from ..files import make_dirs

    out = make_dirs(out_dir)
    engines, reasons = mark(g, config.target.family)
    kw = {} if compiler is None else {"compiler": compiler}
    compiled, n_compiles = compile_segments(g, engines, reasons, config.target.name, config.system_config,
                                            config.memory_mode, out, **kw)
    for old in out.glob("seg*.*"):
        old.unlink()
    seg_of = {i: cs.segment.index for cs in compiled for i in cs.segment.ops}
    ops = [{"index": i, "op": o.op, "source": o.source, "engine": engines[i], "reason": reasons[i], "segment": seg_of[i]}
           for i, o in enumerate(g.ops)]
    segments = []
    for cs in compiled:
        s = cs.segment
        entry = {"index": s.index, "engine": s.engine, "ops": s.ops, "first_op": s.ops[0], "last_op": s.ops[-1]}
        if s.engine == NPU:
            v = cs.vela
            k = s.index
            write_atomic(out / f"seg{k}.cmd.bin", v.cmd_data)
            write_atomic(out / f"seg{k}.weights.bin", v.weight_data)
            write_atomic(out / f"seg{k}.vela.log", v.log)
            write_atomic(out / f"seg{k}.tosa", serialize(subgraph(g, s.ops)))
            sm = v.summary
            flash = float(sm.get("off_chip_flash_memory_used", 0.0)) + float(sm.get("dram_memory_used", 0.0)) \
                + float(sm.get("on_chip_flash_memory_used", 0.0))
            entry.update({
                "inputs": _io_entries(g, s.inputs, v.inputs, "input", k),
                "outputs": _io_entries(g, s.outputs, v.outputs, "output", k),
                "cmd_bytes": len(v.cmd_data), "weight_bytes": len(v.weight_data), "weight_region": v.weight_region,
                "scratch_bytes": v.scratch_size, "scratch_region": v.scratch_region,
                "fast_scratch_bytes": v.scratch_fast_size, "fast_scratch_region": v.scratch_fast_region,
                "cycles": v.cycles, "npu_cycles": int(round(float(sm.get("cycles_npu", 0.0)))),
                "time_s": float(sm.get("inference_time", 0.0)),
                "sram_bytes": int(round(float(sm.get("sram_memory_used", 0.0)) * _KIB)),
                "flash_bytes": int(round(flash * _KIB)),
                "macs": int(round(float(sm.get("nn_macs", 0.0)))),
                "layers": _layers(g, cs),
                "files": {"cmd": f"seg{k}.cmd.bin", "weights": f"seg{k}.weights.bin", "tosa": f"seg{k}.tosa",
                          "log": f"seg{k}.vela.log"},
            })
        else:
            entry.update({"inputs": [{"name": n, "bytes": g.tensors[n].nbytes} for n in s.inputs],
                          "outputs": [{"name": n, "bytes": g.tensors[n].nbytes} for n in s.outputs]})
        segments.append(entry)
    npu_segs = [s for s in segments if s["engine"] == NPU]
    totals = {"segments": len(segments), "npu_segments": len(npu_segs),
              "npu_ops": sum(1 for e in engines if e == NPU), "cpu_ops": sum(1 for e in engines if e != NPU),
              "cycles": sum(s["cycles"] for s in npu_segs), "time_s": sum(s["time_s"] for s in npu_segs),
              "sram_bytes": max((s["sram_bytes"] for s in npu_segs), default=0),
              "flash_bytes": sum(s["flash_bytes"] for s in npu_segs), "macs": sum(s["macs"] for s in npu_segs),
              "weight_bytes": sum(s["weight_bytes"] for s in npu_segs),
              "scratch_bytes": max((s["scratch_bytes"] for s in npu_segs), default=0),
              "fast_scratch_bytes": max((s["fast_scratch_bytes"] for s in npu_segs), default=0)}
    plan = {"version": PLAN_VERSION, "model": model, "vela_version": PINNED_VERSION, **config.to_json(),
            "ops": ops, "segments": segments, "totals": totals, "softmax": softmax_forms(g), "vela_compiles": n_compiles}
    write_json(out / "plan.json", plan)
    return plan


def load_plan(path: str | Path) -> dict:
    """A ``plan.json`` written by :func:`build_plan` (a folder: its ``plan.json``).

    Raises:
        StageError: the file is missing, unreadable, or of another version (rebuild with ``tabula npu``)."""
    p = Path(path)
    if p.is_dir():
        p = p / "plan.json"
    fix = "make it again with tabula npu (or scons npu=...)"
    try:
        plan = json.loads(p.read_text())
    except FileNotFoundError:
        raise StageError(f"NPU plan {p} not found; {fix}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise StageError(f"NPU plan {p} is not readable ({type(e).__name__}: {e}); {fix}") from None
    if not isinstance(plan, dict) or plan.get("version") != PLAN_VERSION:
        raise StageError(f"NPU plan {p} is not a version-{PLAN_VERSION} plan; {fix}")
    return plan
