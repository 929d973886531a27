"""Refuse calibrated grids the integer program cannot hold, before anything is lowered.

A calibration far from the model's own units (images times 1e30, a forgotten division) gives grids
that PT2E accepts but the integer program cannot run: lowering then failed with an internal
"multiplier [0]" line (the CLI) or produced a program whose input scale is 3.9e27 (the API).
:func:`check_grids` runs on the converted graph and names the calibration input and its range:

- **float32**: every activation grid must span at most ``FLOAT32_SAFE`` = 2^64 (real units) -- beyond
  it the product of two of its values overflows float32 (about 2^128), and the float model, PT2E's
  calibration and the bias scales all compute in float32;
- **multiplier**: every weighted op's rescale factor ``input scale x weight scale / output scale`` must
  lie in [2^-63, 2^29): below, its 32-bit multiplier rounds to 0 (every output the zero point); above,
  the shift would be under 2 (TOSA RESCALE, :func:`tabula.qmath.quantize_multiplier`).
"""
from __future__ import annotations

import functools
import math

from .. import rules
from ..errors import QuantizationError
from ..fx import is_dequantize, is_dequantize_per_channel, is_quantize, node_source

FLOAT32_SAFE = 2.0 ** 64
RESCALE_MIN = 2.0 ** -63
RESCALE_MAX = 2.0 ** 29

__all__ = ["check_grids", "FLOAT32_SAFE", "RESCALE_MIN", "RESCALE_MAX"]


def _ranges(ranges: dict[int, tuple[float, float]]) -> str:
    return "; ".join(f"calibration input {k} spans [{lo:.3g}, {hi:.3g}]" for k, (lo, hi) in sorted(ranges.items()))


FIX = ("give calibration inputs in the units the model was trained on (e.g. images in [0, 1], not scaled "
       "by a huge factor) and the same units at run time")


def _value(gm, arg):
    """A float scale, or the tensor of a ``get_attr`` node (per-channel scales), as a list of floats."""
    if hasattr(arg, "op") and arg.op == "get_attr":
        t = functools.reduce(getattr, str(arg.target).split("."), gm)
        return [float(v) for v in t.reshape(-1).tolist()]
    try:
        return [float(arg)]
    except (TypeError, ValueError):
        return None


def _output_quantize(node):
    """The quantize node of ``node``'s output: its only user, or its fused activation's (a relu/clamp)."""
    users = list(node.users)
    if len(users) == 1 and is_quantize(users[0]):
        return users[0]
    if len(users) == 1 and rules.op_class(getattr(users[0], "target", None)) is rules.OpClass.SHARED:
        nxt = list(users[0].users)
        if len(nxt) == 1 and is_quantize(nxt[0]):
            return nxt[0]
    return None


def check_grids(gm, ranges: dict[int, tuple[float, float]]) -> None:
    """Check the converted PT2E graph ``gm``'s grids (module docstring); ``ranges``: each calibration
    input's observed (min, max), for the message.

    Raises:
        QuantizationError: one line naming the calibration inputs' ranges, the activation or op whose
            grid breaks the bound, and the fix.
    """
    for n in gm.graph.nodes:
        if not is_quantize(n) or len(n.args) < 5:
            continue
        scale = _value(gm, n.args[1])
        if not scale:
            continue
        qmin, qmax = int(n.args[3]), int(n.args[4])
        s = max(scale)
        span = s * (qmax - qmin)
        if not (math.isfinite(s) and s > 0) or span > FLOAT32_SAFE:
            src = n.args[0]
            what = ("the model input " + src.name if getattr(src, "op", "") == "placeholder" else
                    f"{src.name} ({node_source(src)})" if hasattr(src, "name") else n.name)
            raise QuantizationError(
                f"{_ranges(ranges)}: the grid of {what} spans {span:.3g}, beyond 2^64 = "
                f"{FLOAT32_SAFE:.3g} where float32 products overflow (scale {s:.3g}); {FIX}")
    for n in gm.graph.nodes:
        if n.op != "call_function" or rules.op_class(n.target) is not rules.OpClass.WEIGHTED:
            continue
        ix, iw, _ = rules.WEIGHTED[rules.canonical_op(n.target)]
        if len(n.args) <= max(ix, iw):
            continue
        x, w, q = n.args[ix], n.args[iw], _output_quantize(n)
        if q is None or not (is_dequantize(x) and (is_dequantize(w) or is_dequantize_per_channel(w))):
            continue
        sx, sw, so = _value(gm, x.args[1]), _value(gm, w.args[1]), _value(gm, q.args[1])
        if not (sx and sw and so) or so[0] <= 0:
            continue
        lo, hi = sx[0] * min(sw) / so[0], sx[0] * max(sw) / so[0]
        if lo < RESCALE_MIN or hi >= RESCALE_MAX:
            r = lo if lo < RESCALE_MIN else hi
            side = "below 2^-63: its 32-bit multiplier would be 0" if lo < RESCALE_MIN else \
                "at or above 2^29: its shift would be under 2"
            raise QuantizationError(
                f"{_ranges(ranges)}: {n.name} ({node_source(n)}) would rescale by {r:.3g} (input scale {sx[0]:.3g} x "
                f"weight scale / output scale {so[0]:.3g}), {side}; {FIX}")
