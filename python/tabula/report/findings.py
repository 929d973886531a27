"""The report's warnings: each names the layer (IR op, source line, node) and the fix.  One function
per kind over the report dict (:func:`tabula.report.analysis.build_report`); :func:`findings` runs them
all.  Each warning is ``{kind, op, tensor, source, text}`` (``op`` the IR op index or None).

=============  ==========================================================================================
kind           when
=============  ==========================================================================================
``codes``      an output grid spans fewer than :data:`MIN_CODES` codes over the central 98 % of its
               calibration values (the rare extremes set the grid; what most inputs give is a few codes)
``clipped``    more than :data:`MAX_CLIPPED` of a grid's calibration values lie more than one LSB outside it
               (a value within one LSB of the end only rounds to the end code, as a softmax's p = 1 does on
               its fixed [0, 1) grid)
``test_clipped`` more than :data:`MAX_CLIPPED` of a grid's *test* values (the float model on the evaluation
               data) lie more than one LSB outside it, and that many more than of its calibration values: the
               calibration data does not cover what the test data gives this layer
``drop``       a layer's SQNR vs float falls more than :data:`MAX_DROP_DB` below its input's -- unless that
               is only the rounding onto a well-used grid (its SQNR within :data:`GRID_SLACK_DB` of what
               rounding onto its grid gives, and at least :data:`MIN_CODES` codes over the central 98 % of
               its calibration values: typically a first layer after a fine input grid)
``table``      a TABLE op's bound (every input code) is above 1 output LSB
``a16w8``      an a16w8 program whose output error is at least what rounding the output to an int8 grid
               alone would cost: its int16 activations buy little over int8 -- the error is the int8
               weights' (the weighted layers whose weights measure the worst SQNR are named)
``layout``     TRANSPOSE ops take more than :data:`MAX_TRANSPOSE_SHARE` of the inference (``profile=1``)
``timer``      requests were sent again while the device was still computing (``spurious_retries``), or
               after silence on a link that damaged nothing: the host's retry timer, not the link
``divergence`` the device differs from the reference (with the first op that differs, when known)
``data``       the run stage's own data warnings (inputs that saturate or collapse, SQNR < 0 dB)
=============  ==========================================================================================
"""
from __future__ import annotations

import math

__all__ = ["findings", "MIN_CODES", "MAX_CLIPPED", "MAX_DROP_DB", "MAX_TRANSPOSE_SHARE"]

MIN_CODES = 16
MAX_CLIPPED = 0.01
MAX_DROP_DB = 10.0
MAX_TRANSPOSE_SHARE = 0.20
GRID_SLACK_DB = 3.0


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _where(r: dict) -> str:
    node = f" node {r['node']}" if r.get("node") else ""
    return f"op {r['index']} {r['op']} -> {r['output']} ({r['source']}{node})"


def _w(kind: str, r: dict | None, text: str) -> dict:
    return {"kind": kind, "op": r["index"] if r else None, "tensor": r["output"] if r else None,
            "source": r["source"] if r else None, "text": text}


def _codes(rep: dict) -> list[dict]:
    out = []
    for r in rep["rows"]:
        c = r.get("calibration")
        if not c or c.get("codes_central") is None or c["codes_central"] >= MIN_CODES:
            continue
        fix = ("clamp what feeds it to the range the data really takes (torch.clamp / hardtanh before it), so the "
               "extremes no longer set its grid" if r["op"] in ("TABLE", "RESCALE") else
               "calibrate with observer='histogram' (it may clip the rare tails), or clamp the values before it")
        out.append(_w("codes", r, (
            f"{_where(r)}: its {r['dtype']} grid (scale {_g(r['scale'])}) spans only {c['codes_central']:.1f} codes over the "
            f"central {c.get('central', 0.98):.0%} of its calibration values ([{c['lo']:.3g}, {c['hi']:.3g}], of "
            f"[{c['min']:.3g}, {c['max']:.3g}]): most values land on a few codes; fix: {fix}{_or_a16w8(r)}")))
    return out


def _or_a16w8(r: dict, lead: str = ", or use scheme=a16w8") -> str:
    """The scheme=a16w8 suggestion, for an int8 layer only (an int16 one has it already)."""
    return lead if r.get("dtype") == "int8" else ""


def _g(scale) -> str:
    if isinstance(scale, list):
        return f"{scale[0]:.3g}..{scale[1]:.3g}"
    return f"{scale:.3g}"


def _clipped(rep: dict) -> list[dict]:
    out = []
    for r in rep["rows"]:
        c = r.get("calibration")
        if not c or (c.get("clipped") or 0) <= MAX_CLIPPED:
            continue
        out.append(_w("clipped", r, (
            f"{_where(r)}: {c['clipped']:.1%} of its calibration values lie outside its grid [{c['grid_min']:.3g}, "
            f"{c['grid_max']:.3g}] (they reach [{c['min']:.3g}, {c['max']:.3g}]) and saturate; fix: calibrate with "
            "observer='minmax' (the grid then spans every calibration value), or on more data if those tails matter")))
    return out


def _test_clipped_share(r: dict) -> float | None:
    """The share of a layer's test values that saturate its grid, when it is above :data:`MAX_CLIPPED` and that
    much above the calibration values' share (else None)."""
    t = r.get("test_range")
    if not t or t.get("clipped") is None:
        return None
    cal = (r.get("calibration") or {}).get("clipped") or 0.0
    return t["clipped"] if t["clipped"] > MAX_CLIPPED and t["clipped"] > cal + MAX_CLIPPED else None


def _test_clipped(rep: dict) -> list[dict]:
    out = []
    for r in rep["rows"]:
        share = _test_clipped_share(r)
        if share is None:
            continue
        lo, hi = r["test_range"]["grid"]
        out.append(_w("test_clipped", r, (
            f"{_where(r)}: {share:.1%} of its test values lie outside its grid [{lo:.3g}, {hi:.3g}] (the test data "
            f"reaches [{r['test_range']['min']:.3g}, {r['test_range']['max']:.3g}]) and saturate; the calibration data "
            "does not cover this layer's range; fix: calibrate on data like the test data (or more of it)")))
    return out


def _drop(rep: dict) -> list[dict]:
    out = []
    for r in rep["rows"]:
        if r.get("drop_db") is None or r["drop_db"] <= MAX_DROP_DB:
            continue
        codes = (r.get("calibration") or {}).get("codes_central")
        if (r.get("grid_sqnr_db") is not None and r["sqnr_db"] >= r["grid_sqnr_db"] - GRID_SLACK_DB
                and codes is not None and codes >= MIN_CODES):
            continue  # the unavoidable rounding onto a well-used grid
        if _test_clipped_share(r) is not None:
            fix = "its grid saturates on the test data (see its test_clipped warning): calibrate on data like the test data"
        elif r["op"] == "TABLE" or (r.get("table") is not None):
            fix = ("its output grid is too coarse where the data lies (see its codes warning, if any): clamp its input "
                   "to the range that matters" + _or_a16w8(r))
        elif r.get("weighted") and r.get("weight_sqnr_db") is not None:  # the model's own weights (not cumsum's ones)
            fix = ("its int8 weights or its output grid: look at its weight SQNR, fold outliers (per-channel weights are "
                   "used already)" + _or_a16w8(r, ", try scheme=a16w8") + ", or quantization-aware training")
        else:
            fix = "its output grid (calibration range) is too wide for the values the data gives; clamp or recalibrate"
        out.append(_w("drop", r, (
            f"{_where(r)}: SQNR vs float {r['sqnr_db']:.1f} dB, {r['drop_db']:.1f} dB below its input's "
            f"({r['input_sqnr_db']:.1f} dB at {r['input_tensor']}): this layer loses the accuracy; fix: {fix}")))
    return out


def _table(rep: dict, graph) -> list[dict]:
    out = []
    by_output = {r["output"]: r for r in rep["rows"]}
    for t in rep.get("tables") or []:
        if (t.get("max_lsb") or 0) <= 1.0:
            continue
        r = by_output.get(t.get("output"))
        where = _where(r) if r else f"TABLE {t.get('function')} ({t.get('source', '')})"
        out.append(_w("table", r, (
            f"{where}: TABLE {t.get('function')} {t.get('dtype', '')} errs by up to {t['max_lsb']:.2f} output LSB over its "
            f"input codes (> 1 LSB, form {t.get('form', 'single')}); fix: a narrower input range (clamp what feeds it) "
            + _or_a16w8(r or {"dtype": t.get("dtype")}, "or scheme=a16w8 (int16 table plans stay within 1 LSB)"))))
    return out


def _a16w8(rep: dict, graph) -> list[dict]:
    rows = rep["rows"]
    if rep["model"].get("activation_dtype") != "int16":
        return []
    outs = [r for r in rows if r["output"] in graph.outputs and r.get("noise_power") is not None]
    hit = []
    for r in outs:
        t = graph.tensors[r["output"]]
        if isinstance(t.scale, list) or t.dtype != "int16":
            continue
        lo, hi = t.qrange or (-32767, 32767)
        s8 = float(t.scale) * (hi - lo) / 255.0  # an int8 grid over the same range
        int8_noise = s8 * s8 / 12.0
        if r["noise_power"] >= int8_noise:
            signal = (r.get("noise_power") or 0) * 10 ** ((r["sqnr_db"] or 0) / 10) if _finite(r.get("sqnr_db")) else None
            int8_db = 10 * math.log10(signal / int8_noise) if signal else None
            hit.append((r, int8_db))
    if not hit:
        return []
    weighted = [r for r in rows if r.get("weight_sqnr_db") is not None]
    weighted.sort(key=lambda r: r["weight_sqnr_db"])
    named = ", ".join(f"op {r['index']} {r['op']} ({r['source']} node {r['node']}: weights {r['weight_sqnr_db']:.1f} dB)"
                      for r in weighted[:3])
    if not named:  # no weight figures: the weighted layers where the SQNR drops most
        drops = sorted((r for r in rows if r.get("weighted") and r.get("drop_db") is not None),
                       key=lambda r: -r["drop_db"])
        named = ", ".join(f"op {r['index']} ({r['source']} node {r['node']}: -{r['drop_db']:.1f} dB)" for r in drops[:3])
    out = []
    for r, int8_db in hit:
        cost = f" (an int8 grid alone would give {int8_db:.1f} dB)" if int8_db is not None else ""
        out.append(_w("a16w8", r, (
            f"a16w8 is not better than int8 here: output {r['output']} is {r['sqnr_db']:.1f} dB from float, an error at "
            f"least as large as rounding it to an int8 grid{cost}, so the int16 activations buy little; the error is the "
            f"int8 weights'{': ' + named if named else ''}; fix: keep scheme=int8 (half the arena, faster), or reduce "
            "those layers' weight error (fold outliers, quantization-aware training)")))
    return out


def _layout(rep: dict) -> list[dict]:
    rows = [r for r in rep["rows"] if r["op"] == "TRANSPOSE" and r.get("share") is not None]
    share = sum(r["share"] for r in rows)
    if share <= MAX_TRANSPOSE_SHARE:
        return []
    where = ", ".join(f"op {r['index']} ({r['source']}: {r['share']:.0%})" for r in rows)
    return [_w("layout", rows[0], (
        f"layout: TRANSPOSE ops take {share:.0%} of the inference ({where}): the model's tensor layout costs more than "
        "its arithmetic; fix: keep activations in NHWC order -- write a 1-D conv as nn.Conv2d with kernel (1, k) on "
        "[N, C, 1, L] rather than nn.Conv1d, flatten after the last conv only, avoid permute/transpose between layers"))]


def _timer(rep: dict, results: dict) -> list[dict]:
    link = results.get("link") or {}
    spurious = int(link.get("spurious_retries") or 0)
    causes = link.get("retries_by_cause") or {}
    silence = int(causes.get("silence") or 0)
    damaged = int(link.get("damaged_detected_by_host") or 0) + int(link.get("damaged_detected_by_device") or 0)
    other = sum(int(v) for k, v in causes.items() if k != "silence")
    tick_hz, ticks = results.get("tick_hz"), results.get("ticks_per_inference")
    took = f" (the device reports {ticks / tick_hz * 1e3:.1f} ms per inference of its own clock)" if tick_hz and ticks else ""
    out = []
    if spurious:
        out.append(_w("timer", None, (
            f"link: {spurious} request(s) were sent again while the device was still computing -- both answers arrived, "
            f"nothing was lost{took}: the host's retry timer fired before a slow inference ended (a loaded machine or "
            "emulator), not a link fault; nothing to fix (runner timeout_s bounds the wait)")))
    if silence and not damaged and not other:
        out.append(_w("timer", None, (
            f"link: {silence} retr{'y' if silence == 1 else 'ies'} after silence on a link that damaged no frame either "
            f"way{took}: most likely the retry timer outlasted by a slow inference, not the link; the timer adapts "
            "(its floor is twice the inference time); if it recurs on real hardware, check the baud rate and cable")))
    return out


def _divergence(rep: dict, results: dict) -> list[dict]:
    n = results.get("bit_exact_mismatches")
    if not n:
        return []
    d = results.get("first_divergence") or {}
    if d.get("op") is not None:
        text = (f"device differs from the integer reference in {n} output element(s); the first op that differs on sample "
                f"{d['sample']} is op {d['op']} {d.get('name', '')} ({d.get('kernel') or 'no kernel'}, {d.get('source', '')}) "
                f"writing {d['tensor']}: element {d['element']} {d.get('index_nd', '')} is {d['device']} on the device, "
                f"{d['reference']} in the reference ({d['n_differ']} of {d['n_elements']} elements differ); fix: that kernel "
                "(tests/ops/test_<op>.py runs it against the reference)")
    elif d.get("agree"):
        text = (f"device differs from the integer reference in {n} output element(s), yet every op's output of sample "
                f"{d.get('sample')} agrees when read one op at a time: a race or an arena overlap between ops")
    else:
        text = (f"device differs from the integer reference in {n} output element(s); "
                f"{d.get('why') or 'run tabula debug <build dir> to find the first op that differs'}")
    return [_w("divergence", None, text)]


def findings(rep: dict, graph, results: dict | None = None) -> list[dict]:
    """Every warning for report ``rep`` of ``graph`` (and, after a run, its ``results``), in the order of
    the module docstring's table."""
    results = results or {}
    out = _codes(rep) + _clipped(rep) + _test_clipped(rep) + _drop(rep) + _table(rep, graph) + _a16w8(rep, graph) + _layout(rep)
    out += _timer(rep, results) + _divergence(rep, results)
    earlier = {f.get("text") for f in results.get("findings") or [] if isinstance(f, dict)}
    for w in results.get("warnings") or []:  # the run stage's data warnings (its report's own are recomputed)
        if w not in earlier and not any(w == f["text"] for f in out):
            out.append({"kind": "data", "op": None, "tensor": None, "source": None, "text": w})
    return out
