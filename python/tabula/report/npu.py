"""The NPU part of the report: what runs where and what Vela estimates, from an NPU build's plan
(``npu/plan.json``, :mod:`tabula.npu.plan`) and, after a run, the device's ticks per segment.

:func:`npu_results` is ``results.json``'s ``npu`` entry: the target and configuration, every op's engine (and
why, for a CPU op), per segment its engine, ops and figures (NPU: Vela's cycles, time at the configured clock, SRAM and flash bytes, MACs and
per-layer cycles; CPU: the instructions the device measured, where the runner counts them), every CPU op
with its reason, and the totals.  :func:`plan_lines` / :func:`npu_lines` are the printed lines.
"""
from __future__ import annotations

__all__ = ["npu_results", "plan_lines", "npu_lines"]


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} us"


def npu_results(plan: dict, profile: list | None = None, driver: str = "ethosu") -> dict:
    """``results.json``'s ``npu``: the plan's figures, and per segment the device's ``instructions`` (and
    ``ticks``) from ``profile`` (the run's per-op entries: codegen emits one per CPU op and one per NPU
    segment, in order).  ``driver``: ``"ethosu"`` or ``"standin"`` -- with the test-only stand-in an NPU
    segment's instructions are the CPU running the segment's ops through tabula's kernels, not the NPU."""
    segs = []
    for s in plan["segments"]:
        entry = {k: s[k] for k in ("index", "engine", "first_op", "last_op") if k in s}
        entry["n_ops"] = len(s["ops"])
        if s["engine"] == "npu":
            entry.update({k: s[k] for k in ("cycles", "npu_cycles", "time_s", "sram_bytes", "flash_bytes", "macs",
                                            "cmd_bytes", "weight_bytes", "scratch_bytes", "fast_scratch_bytes")})
            entry["layers"] = s["layers"]
        segs.append(entry)
    if profile:  # the device's per-op ticks, summed per segment (a CPU op belongs to the next CPU segment)
        ticks = [0.0] * len(segs)
        instr = [0.0] * len(segs)
        have_instr = all(e.get("instructions") is not None for e in profile)
        i = 0
        for e in profile:
            npu_call = e["op"] == "NPU_SEGMENT"
            while i < len(segs) - 1 and (segs[i]["engine"] == "npu") != npu_call:
                i += 1
            ticks[i] += float(e.get("ticks") or 0)
            instr[i] += float(e.get("instructions") or 0)
            if npu_call:
                i += 1
        for s, t, n in zip(segs, ticks, instr):
            s["ticks"] = round(t, 1)
            s["instructions"] = round(n) if have_instr else None
    cpu_ops = [{"index": o["index"], "op": o["op"], "reason": o["reason"], "source": o["source"]}
               for o in plan["ops"] if o["engine"] != "npu"]
    totals = dict(plan["totals"])
    if profile and all(s.get("instructions") is not None for s in segs):
        totals["cpu_instructions"] = sum(s["instructions"] for s in segs if s["engine"] != "npu")
    return {"target": plan["target"], "macs_per_cycle": plan["macs"], "system_config": plan["system_config"],
            "memory_mode": plan["memory_mode"], "clock_hz": plan["clock_hz"], "regions": plan["regions"],
            "vela_version": plan["vela_version"], "driver": driver, "segments": segs, "cpu_ops": cpu_ops,
            "ops": [{k: o[k] for k in ("index", "op", "engine", "reason", "segment")} for o in plan["ops"]], "totals": totals,
            "softmax": plan.get("softmax", [])}


def plan_lines(plan: dict) -> list[str]:
    """What the plan says, as report lines: the target, the split, each segment, each CPU op and why."""
    t = plan["totals"]
    lines = [f"npu {plan['target']} ({plan['system_config']}, {plan['memory_mode']}, {plan['clock_hz'] / 1e6:.0f} MHz): "
             f"{t['npu_ops']} of {t['npu_ops'] + t['cpu_ops']} IR ops on the NPU in {t['npu_segments']} segment(s), "
             f"{t['cpu_ops']} on the CPU; Vela: {t['cycles']:,} cycles ({_us(t['time_s'])}), SRAM {t['sram_bytes']:,} B, "
             f"flash {t['flash_bytes']:,} B, {t['macs']:,} MACs"]
    for s in plan["segments"]:
        span = f"ops {s['first_op']}-{s['last_op']} ({len(s['ops'])})"
        if s["engine"] == "npu":
            lines.append(f"  segment {s['index']} NPU {span}: {s['cycles']:,} cycles ({_us(s['time_s'])}), scratch "
                         f"{s['scratch_bytes']:,} B, weights {s['weight_bytes']:,} B, command stream {s['cmd_bytes']:,} B")
        else:
            lines.append(f"  segment {s['index']} CPU {span}")
    for o in plan["ops"]:
        if o["engine"] != "npu":
            lines.append(f"  CPU op {o['index']} {o['op']}: {o['reason']}")
    return lines


def npu_lines(npu: dict) -> list[str]:
    """``results.json``'s ``npu`` as report lines (the printed table's NPU part)."""
    t = npu["totals"]
    lines = [f"npu {npu['target']} ({npu['system_config']}, {npu['memory_mode']}, {npu['clock_hz'] / 1e6:.0f} MHz): "
             f"{t['npu_ops']} NPU / {t['cpu_ops']} CPU IR ops, {t['npu_segments']} NPU of {t['segments']} segments; "
             f"Vela {t['cycles']:,} cycles ({_us(t['time_s'])}), SRAM {t['sram_bytes']:,} B, flash {t['flash_bytes']:,} B"
             + (f"; CPU segments {t['cpu_instructions']:,} instructions" if t.get("cpu_instructions") is not None
                and t.get("cpu_ops") else "")]
    for s in npu["segments"]:
        span = f"ops {s['first_op']}-{s['last_op']}"
        if s["engine"] == "npu":
            who = "the stand-in running its ops on the CPU" if npu.get("driver") == "standin" else "glue and driver"
            dev = f"; this run: {s['instructions']:,} instructions ({who})" if s.get("instructions") else ""
            lines.append(f"  segment {s['index']} NPU {span}: {s['cycles']:,} cycles, {_us(s['time_s'])}, {s['macs']:,} MACs"
                         + dev)
            for layer in s.get("layers", []):
                at = f"IR op {layer['ir_op']} {layer['tensor']}" if layer.get("ir_op") is not None else "Vela's own"
                lines.append(f"    {layer['op']:<12} {layer['npu_op']:<12} {layer['cycles']:>9,} cycles {layer['macs']:>10,} MACs"
                             f"  ({at})")
        else:
            n = s.get("instructions")
            lines.append(f"  segment {s['index']} CPU {span}" + (f": {n:,} instructions" if n is not None else ""))
    for o in npu["cpu_ops"]:
        lines.append(f"  CPU op {o['index']} {o['op']}: {o['reason']}")
    return lines
