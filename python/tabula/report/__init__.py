"""Report: accuracy and fidelity figures, ``results.json``, and the summary table."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

__all__ = ["accuracy", "sqnr_db", "write_results", "print_table", "link_summary", "injected_summary",
           "check_results", "printable"]


def accuracy(logits: np.ndarray, labels: np.ndarray | None) -> float | None:
    """Top-1 accuracy of ``logits`` [n, classes] against int ``labels`` [n]; None without labels."""
    if labels is None or len(labels) == 0:
        return None
    return float((np.asarray(logits).reshape(len(labels), -1).argmax(1) == np.asarray(labels)).mean())


def sqnr_db(reference: np.ndarray, test: np.ndarray) -> float | None:
    """Signal-to-quantization-noise ratio in dB: ``10 log10(sum(ref^2) / sum((ref - test)^2))``.
    ``inf`` when identical; None when empty."""
    r = np.asarray(reference, np.float64).reshape(-1)
    t = np.asarray(test, np.float64).reshape(-1)
    if r.size == 0:
        return None
    noise = float(((r - t) ** 2).sum())
    if noise == 0.0:
        return float("inf")
    return round(10.0 * np.log10(float((r**2).sum()) / noise), 2)


def write_results(path: str | Path, results: dict) -> None:
    """Write ``results`` as JSON, atomically (temporary file + rename; StageError naming the file when
    the disk is full or read-only, with no ``*.tmp`` left)."""
    from ..files import write_atomic

    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(p, json.dumps(results, indent=1, sort_keys=True) + "\n")


def printable(value):
    """``value`` with every control character in its strings (keys too) written as an escape
    (``\\x1b``, ``\\n``): a tampered ``results.json`` cannot move the cursor, recolour or clear the
    terminal, or split a line of the report."""
    if isinstance(value, str):
        if not any(ord(c) < 32 or 127 <= ord(c) < 160 for c in value):
            return value
        return "".join(c if not (ord(c) < 32 or 127 <= ord(c) < 160) else repr(c)[1:-1] for c in value)
    if isinstance(value, dict):
        return {printable(k): printable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [printable(v) for v in value]
    return value


#: What print_table reads from each list of records: (required keys, optional keys), each with its kind:
#: "num" a number, "num?" a number or null, "text", "list".
_RECORDS = {
    "outputs": ({"index": "num", "shape": "list", "bit_exact_mismatches": "num", "sqnr_db_vs_float": "num?"}, {"differ_from_float": "num"}),
    "memory": ({"region": "text"}, {"length": "num?", "used": "num?", "constants": "num?", "n_constants": "num?",
                                    "arena": "num?"}),
    "profile": ({}, {"macs": "num?", "ticks": "num?", "instructions": "num?", "instr_per_mac": "num?", "share": "num?"}),
    "tables": ({}, {"max_lsb": "num", "mean_lsb": "num"}),
}


MAX_DEPTH = 32


def _kind_ok(v, kind: str) -> bool:
    if kind == "text":
        return isinstance(v, str)
    if kind == "list":
        return isinstance(v, list)
    if v is None:
        return kind == "num?"
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def check_results(results) -> None:
    """Check that ``results`` has the structure :func:`print_table` reads: an object; ``outputs``,
    ``memory``, ``profile``, ``tables`` lists of objects with their keys and number fields; ``link``
    (its ``injected``, ``retries_by_cause``) objects; ``warnings`` a list of text.

    Raises:
        ValueError: one line naming the first entry that breaks it (e.g. ``'memory'[0] lacks 'region'``).
    """
    if not isinstance(results, dict):
        raise ValueError(f"it holds a JSON {type(results).__name__}, not an object")
    stack, deepest = [(results, 1)], 1
    while stack:  # iteratively: a hostile file must not exhaust the recursion limit here
        v, d = stack.pop()
        deepest = max(deepest, d)
        if deepest > MAX_DEPTH:
            raise ValueError(f"it is nested more than {MAX_DEPTH} levels deep (tabula's own results are a few levels deep)")
        if isinstance(v, dict):
            stack += [(x, d + 1) for x in v.values()]
        elif isinstance(v, list):
            stack += [(x, d + 1) for x in v]
    for key, (required, optional) in _RECORDS.items():
        recs = results.get(key)
        if recs is None:
            continue
        if not isinstance(recs, list):
            raise ValueError(f"'{key}' is a {type(recs).__name__}, not a list")
        for i, r in enumerate(recs):
            if not isinstance(r, dict):
                raise ValueError(f"'{key}'[{i}] is a {type(r).__name__}, not an object")
            missing = [k for k in required if k not in r]
            if missing:
                raise ValueError(f"'{key}'[{i}] lacks '{missing[0]}'")
            for k, kind in {**required, **optional}.items():
                if k in r and not _kind_ok(r[k], kind):
                    want = {"num": "a number", "num?": "a number", "text": "text", "list": "a list"}[kind]
                    raise ValueError(f"'{key}'[{i}]['{k}'] is {type(r[k]).__name__}, not {want}")
            if key == "memory" and r.get("used") and r.get("length") is None:
                raise ValueError(f"'memory'[{i}] has 'used' but no 'length'")
    link = results.get("link")
    if link is not None:
        if not isinstance(link, dict):
            raise ValueError(f"'link' is a {type(link).__name__}, not an object")
        for k in ("injected", "retries_by_cause"):
            if link.get(k) is not None and not isinstance(link[k], dict):
                raise ValueError(f"'link'['{k}'] is a {type(link[k]).__name__}, not an object")
    prec = results.get("precision")
    if prec is not None:
        if not isinstance(prec, dict) or not isinstance(prec.get("layers", []), list):
            raise ValueError("'precision' is not an object with a list of 'layers'")
        for i, lay in enumerate(prec.get("layers", [])):
            if not isinstance(lay, dict) or not isinstance(lay.get("label"), str) or lay.get("scheme") not in ("int8", "a16w8"):
                raise ValueError(f"'precision'['layers'][{i}] is not a layer choice (label text, scheme int8 or a16w8)")
    warnings = results.get("warnings")
    if warnings is not None and not (isinstance(warnings, list) and all(isinstance(w, str) for w in warnings)):
        raise ValueError("'warnings' is not a list of text")


_DECIMALS = {"sqnr_db_vs_float": 1, "wall_seconds": 2}


def _fmt(v, key: str = "") -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{_DECIMALS.get(key, 4)}f}"
    return str(v)


def print_table(results: dict) -> None:
    """Print the headline figures of a run as a two-column table (control characters in its text
    escaped: :func:`printable`)."""
    results = printable(results)
    keys = [
        "board", "runner", "n_samples", "float_accuracy", "reference_accuracy", "device_accuracy",
        "bit_exact_mismatches", "sqnr_db_vs_float", "differ_from_float", "instructions_per_inference", "flash_bytes",
        "ram_bytes", "arena_bytes", "wall_seconds",
    ]
    width = max(len(k) for k in keys)
    print("tabula results")
    for k in keys:
        if k in results:
            print(f"  {k:<{width}}  {_fmt(results[k], k)}")
    for o in results.get("outputs") or []:  # several model outputs: one line each
        vs_float = (f"elements differing from float {o['differ_from_float']}" if "differ_from_float" in o
                    else f"sqnr_db_vs_float {_fmt(o['sqnr_db_vs_float'], 'sqnr_db_vs_float')}")
        print(f"  output {o['index']} {str(o['shape']):<18} bit_exact_mismatches {o['bit_exact_mismatches']}, {vs_float}")
    for r in results.get("memory") or []:
        name = r["region"]
        what = [f"{r.get('n_constants', '?')} constants {r['constants']} B" if r.get("constants") else "",
                f"arena {r['arena']} B" if r.get("arena") else "",
                f"NPU command streams, weights and scratch {r['npu']} B" if r.get("npu") else ""]
        what = ", ".join(w for w in what if w)
        if r.get("used") is not None and r["used"]:
            print(f"  {'memory ' + name:<{width}}  {r['used']} of {r['length']} B" + (f" ({what})" if what else ""))
        elif what:
            print(f"  {'memory ' + name:<{width}}  {what}")
    link = results.get("link")
    if link:
        print(f"  {'link':<{width}}  {link_summary(link)}")
        if link.get("injected"):
            print(f"  {'link_faults_injected':<{width}}  {injected_summary(link['injected'])}")
    for w in results.get("warnings") or []:
        print(f"  warning: {w}")
    if results.get("npu"):
        from .npu import npu_lines

        for line in npu_lines(results["npu"]):
            print(f"  {line}")
    print_profile(results.get("profile"))
    print_precision(results.get("precision"), results.get("instructions_per_inference"))
    groups: dict[tuple, list[dict]] = {}  # the same table at every step of an unrolled recurrence: one line
    for t in results.get("tables") or []:
        key = tuple(t.get(k) for k in ("function", "dtype", "form", "tables", "max_lsb", "mean_lsb"))
        groups.setdefault(key, []).append(t)
    for rows in groups.values():
        t = rows[0]
        form = t.get("form", "single")
        form = "" if form == "single" else f" ({form}, {t.get('tables', '?')} tables)"
        where = t.get("source", "") if len(rows) == 1 else f"{len(rows)} ops, the first {t.get('source', '')}"
        print(f"  TABLE {t.get('function', '?'):<20} {t.get('dtype', '')}{form}: max {t.get('max_lsb', float('nan')):.3f} "
              f"LSB, mean {t.get('mean_lsb', float('nan')):.3f} LSB  ({where})")


def print_precision(precision: dict | None, measured: float | None = None) -> None:
    """The per-layer lines of a mixed-precision build (``results.json`` ``precision``: the
    :class:`tabula.quantizer.mixed.Choice` of ``precision.json``): each layer's scheme, estimated
    instructions int8 / int16 and gain, then the totals the choice was made on; and, where the device's
    ``measured`` instructions per inference exceed the choice's budget, a line saying so (the budget is the
    cost model's estimate, not a bound)."""
    if not precision:
        return
    from ..quantizer.choice import Choice

    choice = Choice.from_json(precision)
    for line in choice.table().splitlines():
        print(f"  {line}")
    if measured and choice.budget and measured > choice.budget:
        print(f"  warning: the device ran {measured:,.0f} instructions per inference, {100 * (measured / choice.budget - 1):.0f} % "
              f"over the budget {choice.budget:,.0f} (the cost model estimated {choice.instructions_mixed:,.0f}; it misses "
              "some kernels' paths: README, Mixed precision); fix: a lower budget= or fewer int16 overrides")


def link_summary(link: dict) -> str:
    """One line from ``results["link"]`` (tabula.deploy.SessionResult.link_stats): frames each way,
    damaged frames each side detected, retries by cause (and those that were only a slow device),
    OUTPUTs the device replayed."""
    dev = link.get("damaged_detected_by_device")
    causes = ", ".join(f"{n} {c}" for c, n in (link.get("retries_by_cause") or {}).items())
    return (f"frames sent {link.get('frames_sent', 0)}, received {link.get('frames_received', 0)}; "
            f"damaged detected: host {link.get('damaged_detected_by_host', 0)}, device "
            f"{'-' if dev is None else dev}; retried {link.get('retries', 0)}"
            + (f" ({causes})" if causes else "")
            + (f", {link['spurious_retries']} more while the device was still computing (not counted)"
               if link.get("spurious_retries") else "")
            + f"; replayed {_fmt(link.get('outputs_replayed'))}")


def injected_summary(injected: dict) -> str:
    """One line from ``results["link"]["injected"]``: what a fault-injecting link really did."""
    kinds = ", ".join(f"{injected.get(k, 0)} {k}" for k in ("flip", "drop", "dup", "delay"))
    return (f"{injected.get('spec', '?')}: {injected.get('frames_damaged', 0)} of "
            f"{injected.get('frames', 0)} frames damaged ({kinds} over {injected.get('bytes', 0)} bytes)")


def print_profile(profile: list | None) -> None:
    """The per-op lines of a profiling run (``results.json`` ``profile``): index, op, kernel, output
    shape, MACs, instructions (ticks where the runner does not count instructions), instructions per
    MAC and share of the inference, most expensive first marked by its share."""
    if not profile:
        return
    instr = any(p.get("instructions") is not None for p in profile)
    print(f"  profile ({'instructions' if instr else 'ticks'} per op, mean over the samples)")
    print(f"    {'#':>3} {'op':<17} {'kernel':<27} {'shape':<18} {'MACs':>10} "
          f"{'instructions' if instr else 'ticks':>12} {'instr/MAC':>9} {'share':>6}")
    for i, p in enumerate(profile):
        n = p.get("instructions") if instr else p.get("ticks")
        ipm = p.get("instr_per_mac")
        share = p.get("share")
        print(f"    {i:>3} {p.get('op', '?'):<17} {p.get('kernel') or '-':<27} {str(p.get('shape')):<18} "
              f"{p.get('macs') or 0:>10,} {'-' if n is None else f'{round(n):,}':>12} {'-' if ipm is None else f'{ipm:.3f}':>9} "
              f"{'-' if share is None else f'{share:.1%}':>6}")
