"""The NPU part of ``model.c``'s template context (:mod:`.npu` decides the graphs; this renders the data):
every NPU segment's command stream and weights as ``uint8_t`` arrays in the sections placement gave them,
the shared scratch buffers, one ``tabula_npu_segment`` descriptor per segment (its inputs and outputs at
Vela's region and offset) and, for the test-only stand-in, its table and segment bodies."""
from __future__ import annotations

from .npu import NpuCodegen, StandinBody

__all__ = ["npu_context", "segment_macs"]


def segment_macs(npu: NpuCodegen, k: int) -> int:
    """Vela's MAC count of NPU segment ``k`` (its summary's ``nn_macs``)."""
    return int(npu.plan["segments"][k].get("macs", 0))


def _bytes_body(data: bytes, per_line: int = 24) -> str:
    hexes = [f"0x{b:02x}" for b in data]
    return "\n".join("    " + ", ".join(hexes[i:i + per_line]) + "," for i in range(0, len(hexes), per_line)) or "    0,"


def npu_context(npu: NpuCodegen, placement, standin: list[StandinBody], bodies_ctx: list[list[dict]], ref) -> dict:
    """``model.c.j2``'s ``npu`` block: ``arrays`` (command streams, weights), ``buffers`` (scratch),
    ``segments`` (descriptors), ``standin`` (None without the stand-in: its bodies and table)."""
    plan = npu.plan
    sec = placement.fixed_section
    arrays, segments = [], []
    has_fast = int(plan["totals"]["fast_scratch_bytes"]) > 0
    for s in plan["segments"]:
        if s["engine"] != "npu":
            continue
        k = s["index"]
        for what, name in (("cmd", f"tabula_npu_seg{k}_cmd"), ("weights", f"tabula_npu_seg{k}_weights")):
            data = npu.segment_bytes(k, what) or b"\0"
            arrays.append(dict(cname=name, count=len(data), body=_bytes_body(data), section=sec.get(name),
                               comment=f"NPU segment {k}: Vela's {'command stream (COP1 header first)' if what == 'cmd' else 'encoded weights (base pointer 0)'}, "
                                       f"{len(data)} bytes"))
        segments.append(dict(index=k, cmd=f"tabula_npu_seg{k}_cmd", cmd_bytes=s["cmd_bytes"],
                             weights=f"tabula_npu_seg{k}_weights", weight_bytes=s["weight_bytes"],
                             scratch_bytes=max(int(plan["totals"]["scratch_bytes"]), 16),
                             fast="tabula_npu_fast_scratch" if has_fast else "tabula_npu_scratch",
                             fast_bytes=int(plan["totals"]["fast_scratch_bytes"]) if has_fast
                             else max(int(plan["totals"]["scratch_bytes"]), 16),
                             inputs=s["inputs"], outputs=s["outputs"],
                             ops=f"IR ops {s['first_op']}-{s['last_op']} ({len(s['ops'])}), {s['cycles']} NPU cycles (Vela)"))
    buffers = []
    if segments:
        buffers.append(dict(cname="tabula_npu_scratch", nbytes=max(int(plan["totals"]["scratch_bytes"]), 16),
                            section=sec.get("tabula_npu_scratch"), comment="the NPU's scratch (base pointer 1)"))
        if has_fast:
            buffers.append(dict(cname="tabula_npu_fast_scratch", nbytes=int(plan["totals"]["fast_scratch_bytes"]),
                                section=sec.get("tabula_npu_fast_scratch"),
                                comment="the NPU's fast scratch (base pointer 2)"))
    sb = None
    if npu.standin:
        sb = []
        for body, ops in zip(standin, bodies_ctx):
            seg = plan["segments"][body.index]
            sb.append(dict(index=body.index, ops=ops, scratch_bytes=seg["scratch_bytes"], cmd_bytes=seg["cmd_bytes"],
                           weight_bytes=seg["weight_bytes"],
                           inputs=[dict(dst=ref(n), region=r, offset=o, bytes=b) for n, r, o, b in body.inputs],
                           outputs=[dict(src=ref(n), region=r, offset=o, bytes=b) for n, r, o, b in body.outputs]))
    return dict(target=plan["target"], memory_mode=plan["memory_mode"], system_config=plan["system_config"],
                arrays=arrays, buffers=buffers, segments=segments, standin=sb)

