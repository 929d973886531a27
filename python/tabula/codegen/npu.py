"""Codegen for an NPU build: the graph ``tabula_model_run()`` runs, given the build's NPU plan
(``npu/plan.json``, :mod:`tabula.npu.plan`).

Each CPU segment's ops are fused on their own (:func:`tabula.codegen.fusion.fuse_all` over the segment,
so no fusion reaches across a segment boundary); each NPU segment becomes one ``NPU_SEGMENT`` op (its
inputs and outputs are the segment's: arena tensors), whose call copies them to and from the scratch
(``firmware_templates/runtime/npu/tabula_npu.c``).  The segment's own tensors and weights do not exist on
the CPU side: the arena holds only what the CPU segments and the segment boundaries need.

With the test-only driver stand-in (``standin``) each NPU segment also gets a body that runs its ops
through tabula's kernels (fused on their own): its inputs and outputs are separate copies
(``npu<k>__<name>``) that the body fills from / writes to the scratch at Vela's offsets, and the arena
plan sees them, the segment's intermediates and the pseudo ops ``STANDIN_IN`` / ``STANDIN_OUT`` where
the segment runs, so nothing the body writes overlaps a live tensor of the model.

:func:`npu_arrays` lists the NPU's own arrays (command streams and weights: constants in the weights'
region; the scratch and fast scratch: NOLOAD buffers in theirs) for placement.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from ..errors import StageError
from ..ir import Graph, Op
from .fusion import fuse_all

__all__ = ["NpuCodegen", "StandinBody", "split_for_npu", "npu_arrays", "NPU_SEGMENT", "STANDIN_IN", "STANDIN_OUT"]

NPU_SEGMENT, STANDIN_IN, STANDIN_OUT = "NPU_SEGMENT", "STANDIN_IN", "STANDIN_OUT"


@dataclass
class NpuCodegen:
    """What codegen needs of an NPU build: the plan (``plan.json``'s content), the folder of its files and
    whether the firmware links the test-only driver stand-in."""

    plan: dict
    plan_dir: Path
    standin: bool = False

    def segment_bytes(self, k: int, what: str) -> bytes:
        """The bytes of NPU segment ``k``'s ``"cmd"`` or ``"weights"`` file.

        Raises:
            StageError: the file is missing or its size is not the plan's (rebuild the plan)."""
        seg = self.plan["segments"][k]
        p = Path(self.plan_dir) / seg["files"][what]
        want = seg["cmd_bytes" if what == "cmd" else "weight_bytes"]
        try:
            data = p.read_bytes()
        except FileNotFoundError:
            raise StageError(f"NPU segment {k}: {p} not found; make the plan again with tabula npu") from None
        if len(data) != want:
            raise StageError(f"NPU segment {k}: {p} has {len(data)} bytes, the plan says {want}; make the plan again "
                             "with tabula npu")
        return data


@dataclass
class StandinBody:
    """One NPU segment as the stand-in runs it: ``ops`` (fused, over the renamed copies of its inputs and
    outputs), ``inputs`` / ``outputs``: ``(copy tensor, region, offset, bytes)`` at Vela's offsets."""

    index: int
    ops: list[Op]
    inputs: list[tuple[str, int, int, int]] = field(default_factory=list)
    outputs: list[tuple[str, int, int, int]] = field(default_factory=list)


def _segment_graph(g: Graph, ops: list[int]) -> Graph:
    from ..npu.partition import subgraph

    return subgraph(g, ops)


def _merge(into: Graph, part: Graph) -> None:
    for n, t in part.tensors.items():
        if n not in into.tensors:
            into.add_tensor(t, part.constants.get(n))


def _check(g: Graph, plan: dict) -> None:
    ops = [i for s in plan["segments"] for i in s["ops"]]
    if ops != list(range(len(g.ops))) or [o["op"] for o in plan["ops"]] != [o.op for o in g.ops]:
        raise StageError("the NPU plan was made for another IR (its ops differ from ir.json's): make it again with "
                         "tabula npu")


def split_for_npu(g: Graph, npu: NpuCodegen) -> tuple[Graph, Graph, list[StandinBody]]:
    """``(run, plan_graph, standin)``: the graph ``tabula_model_run()`` emits (CPU ops fused per segment,
    one ``NPU_SEGMENT`` op per NPU segment, ``attrs["segment"]`` its index), the graph the arena is
    planned on (``run`` itself, or with the stand-in's copies, ops and pseudo ops in place of each
    ``NPU_SEGMENT``), and the stand-in's bodies (empty without ``npu.standin``).

    Raises:
        StageError: the plan belongs to another IR."""
    plan = npu.plan
    _check(g, plan)
    run = Graph(inputs=list(g.inputs), outputs=list(g.outputs), io_layout=dict(g.io_layout))
    planned = Graph(inputs=list(g.inputs), outputs=list(g.outputs), io_layout=dict(g.io_layout))
    for n in g.inputs + g.outputs:
        run.add_tensor(g.tensors[n], g.constants.get(n))
        planned.add_tensor(g.tensors[n], g.constants.get(n))
    bodies: list[StandinBody] = []
    for seg in plan["segments"]:
        part = _segment_graph(g, seg["ops"])
        ins, outs = list(part.inputs), list(part.outputs)
        for n in ins + outs:
            for dst in (run, planned):
                if n not in dst.tensors:
                    dst.add_tensor(g.tensors[n])
        if seg["engine"] != "npu":
            fused = fuse_all(part)
            _merge(run, fused)
            _merge(planned, fused)
            run.ops += fused.ops
            planned.ops += fused.ops
            continue
        k = seg["index"]
        call = Op(NPU_SEGMENT, ins, outs, {"segment": k, "n_ops": len(seg["ops"])},
                  f"NPU segment {k}: IR ops {seg['first_op']}-{seg['last_op']}")
        run.ops.append(call)
        if not npu.standin:
            planned.ops.append(call)
            continue
        fused = fuse_all(part)
        copy = {n: f"npu{k}__{n}" for n in ins + outs}
        for n, c in copy.items():
            planned.add_tensor(replace(g.tensors[n], name=c))
        _merge(planned, fused)

        def ren(names):
            return [copy.get(n, n) for n in names]

        body_ops = [replace(o, inputs=ren(o.inputs), outputs=ren(o.outputs)) for o in fused.ops]
        planned.ops.append(Op(STANDIN_IN, ins, ren(ins), {"segment": k}, call.source))
        planned.ops += body_ops
        planned.ops.append(Op(STANDIN_OUT, ren(outs), outs, {"segment": k}, call.source))
        io = {e["name"]: e for e in seg["inputs"] + seg["outputs"]}
        bodies.append(StandinBody(k, body_ops,
                                  [(copy[n], io[n]["region"], io[n]["offset"], io[n]["bytes"]) for n in ins],
                                  [(copy[n], io[n]["region"], io[n]["offset"], io[n]["bytes"]) for n in outs]))
    if not npu.standin:
        planned = run
    return run, planned, bodies


def npu_arrays(npu: NpuCodegen) -> dict[str, tuple[str, int, str]]:
    """The NPU's own arrays: C name -> ``(board region, bytes, "const" | "arena")``: every NPU segment's
    command stream and weights (constants, in the weights' region: the NPU reads both over its AXI port)
    and one scratch and one fast scratch shared by every segment (in their regions)."""
    plan = npu.plan
    regions = plan["regions"]
    out: dict[str, tuple[str, int, str]] = {}
    for s in plan["segments"]:
        if s["engine"] == "npu":
            k = s["index"]
            out[f"tabula_npu_seg{k}_cmd"] = (regions["weights"], int(s["cmd_bytes"]), "const")
            out[f"tabula_npu_seg{k}_weights"] = (regions["weights"], max(int(s["weight_bytes"]), 1), "const")
    t = plan["totals"]
    if t["npu_segments"]:
        out["tabula_npu_scratch"] = (regions["scratch"], max(int(t["scratch_bytes"]), 16), "arena")
        if int(t["fast_scratch_bytes"]):
            out["tabula_npu_fast_scratch"] = (regions["fast_scratch"], int(t["fast_scratch_bytes"]), "arena")
    return out
