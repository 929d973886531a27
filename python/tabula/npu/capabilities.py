"""What each Ethos-U family takes, per IR op: tabula's own encoding, as data, of Vela 5.2's documented TOSA
constraints (``vela --supported-ops-report``: "Ethos-U55 and Ethos-U65 TOSA" and "Ethos-U85 TOSA"), in terms
of the IR ops (each IR op's TOSA mapping is its spec's ``tosa``: FULLY_CONNECTED is a 1x1 CONV2D there).

:data:`TABLES` maps a family to ``{IR op: rules}``; an op missing from a family's table, or whose rules
say ``None``, does not run on that NPU.  Each rule is a key of :data:`CHECKS` with its limit; the
``note`` is what the report says about an op placed on the NPU.  Where Vela 5.2 compiles more than its
report lists, the table follows the compiler (measured: DEPTHWISE_CONV2D is absent from the U55 TOSA
table but compiles; int16 TABLE is listed unsupported but compiles, as several LUT passes), and the
partitioner's compile loop (:mod:`tabula.npu.compile`) is the final word: an op Vela refuses moves to the
CPU whatever this table says.

:func:`npu_refusal` says why one op cannot go to the NPU (None: it can).
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Op

__all__ = ["TABLES", "CHECKS", "npu_refusal", "SOURCE"]

#: Where the limits come from.
SOURCE = "Vela 5.2.0 SUPPORTED_OPS.md (TOSA v1.0 PRO-INT, level 8k)"

_CONV = {"dtypes": [("int8", "int32"), ("int16", "int48")], "kernel_area": 4096, "kernel_h": 64, "stride": 3,
         "channels": 65536, "abs_weight_sum": 127 * 65536, "bias_bits": 40}
_ANY = {"dtypes": [("int8", "int8"), ("int16", "int16"), ("int32", "int32")]}

#: family -> IR op -> rules (``None``: not on this NPU, with the reason under ``_why``).
TABLES: dict[str, dict[str, dict | None]] = {
    "ethos-u55": {
        "CONV2D": _CONV,
        "DEPTHWISE_CONV2D": {**_CONV, "note": "absent from Vela 5.2's U55 TOSA table, but compiles (measured)"},
        "FULLY_CONNECTED": {**_CONV, "note": "a 1x1 CONV2D in TOSA"},
        "AVG_POOL2D": {"dtypes": [("int8", "int8"), ("int16", "int16")], "batch": 1, "hwc": 65536, "kernel_pad": 8,
                       "kernel_area": 65536, "kernel_h": 256, "stride": 3},
        "MAX_POOL2D": {"dtypes": [("int8", "int8"), ("int16", "int16")], "hwc": 65536, "kernel_area": 65536,
                       "kernel_h": 256, "stride": 3},
        "MATMUL": {"dtypes": [("int8", "int32")], "wc": 65536},
        "TABLE": {"dtypes": [("int8", "int8"), ("int16", "int32")],
                  "note": "int16: listed unsupported on the U55, compiles as several LUT passes (measured)"},
        "REDUCE_MAX": {"dtypes": [("int8", "int8"), ("int16", "int16")]},
        "REDUCE_SUM": {"dtypes": [("int32", "int32")], "axis_len": 65536},
        "RESIZE": {"dtypes": [("int8", "int8"), ("int16", "int16")], "upscale_pow2": 8},
        "TRANSPOSE": {**_ANY, "transpose": True},
        "RESCALE": {"int48_with_producer": True},
        "ADD": {"dtypes": [("int32", "int32")]},
        "SUB": {"dtypes": [("int32", "int32")]},
        "MUL": {"dtypes": [("int32", "int32")]},
        "CLAMP": {"dtypes": [("int8", "int8"), ("int16", "int16"), ("int32", "int32")]},
        "PAD": _ANY, "SLICE": _ANY, "CONCAT": _ANY, "RESHAPE": _ANY, "TILE": _ANY,
        "INTDIV": None,
        "_why": {"INTDIV": "no INTDIV on the Ethos-U55/U65 (Vela: TOSA Not Supported Operators)"},
    },
    "ethos-u85": {  # "Unsupported operators: TRANSPOSE_CONV2D / CONV3D with dynamic weights": none of the IR's
        **{op: {} for op in ("CONV2D", "DEPTHWISE_CONV2D", "FULLY_CONNECTED", "AVG_POOL2D", "MAX_POOL2D", "MATMUL",
                             "TABLE", "REDUCE_MAX", "REDUCE_SUM", "RESIZE", "TRANSPOSE", "ADD", "SUB", "MUL", "CLAMP",
                             "PAD", "SLICE", "CONCAT", "RESHAPE", "TILE", "INTDIV")},
        "RESCALE": {"int48_with_producer": True},
    },
}
TABLES["ethos-u65"] = TABLES["ethos-u55"]  # one TOSA table for both (Vela's report)


def _act(g: Graph, op: Op) -> list:
    return [g.tensors[n] for n in op.inputs if not g.tensors[n].const]


def _dtypes(g, op, allowed):
    x = g.tensors[op.inputs[0]]
    y = g.tensors[op.outputs[0]]
    if (x.dtype, y.dtype) not in [tuple(p) for p in allowed]:
        return f"{x.dtype} -> {y.dtype} (takes {', '.join(f'{a} -> {b}' for a, b in allowed)})"
    return None


def _kernel(op, g):
    if op.op == "DEPTHWISE_CONV2D":
        kh, kw = g.tensors[op.inputs[1]].shape[:2]
    elif op.op == "CONV2D":
        kh, kw = g.tensors[op.inputs[1]].shape[1:3]
    elif op.op == "FULLY_CONNECTED":
        kh, kw = 1, 1
    else:
        kh, kw = (int(v) for v in op.attrs["kernel"])
    return int(kh), int(kw)


def _kernel_area(g, op, limit):
    kh, kw = _kernel(op, g)
    return f"kernel {kh}x{kw} has more than {limit} taps" if kh * kw > limit else None


def _kernel_h(g, op, limit):
    kh, _ = _kernel(op, g)
    return f"kernel height {kh} over {limit}" if kh > limit else None


def _kernel_pad(g, op, limit):
    if any(int(v) for v in op.attrs.get("pad", ())):
        kh, kw = _kernel(op, g)
        if kh > limit or kw > limit:
            return f"padded pool with a {kh}x{kw} kernel (padding needs kernels up to {limit}x{limit})"
    return None


def _stride(g, op, limit):
    """Strides over ``limit``, on the axes where the op has more than one output (a global pool's stride
    reads nothing twice: Vela compiles kws's 25x5 average pool)."""
    s = [int(v) for v in op.attrs.get("stride", (1, 1))]
    y = g.tensors[op.outputs[0]].shape
    many = [int(y[1]) > 1, int(y[2]) > 1] if len(y) == 4 else [True, True]
    if any(m and (v > limit or v < 1) for m, v in zip(many, s)):
        return f"stride {s[0]}x{s[1]} outside 1..{limit}"
    return None


def _channels(g, op, limit):
    c = int(g.tensors[op.inputs[0]].shape[-1])
    return f"{c} input channels over {limit}" if c > limit else None


def _abs_weight_sum(g, op, limit):
    w = g.constants.get(op.inputs[1])
    if w is None:
        return None
    w = np.abs(w.astype(np.int64))
    per_out = w.reshape(w.shape[0], -1).sum(axis=1) if op.op != "DEPTHWISE_CONV2D" else w.reshape(-1, w.shape[2] * w.shape[3]).sum(axis=0)
    return f"a filter's absolute weights sum to {int(per_out.max())}, over {limit}" if int(per_out.max()) > limit else None


def _bias_bits(g, op, bits):
    if len(op.inputs) < 3 or op.inputs[2] not in g.constants:
        return None
    b = g.constants[op.inputs[2]].astype(np.int64)
    lim = 1 << (bits - 1)
    return f"a bias outside int{bits}" if b.size and (b.min() < -lim or b.max() >= lim) else None


def _batch(g, op, n):
    b = int(g.tensors[op.inputs[0]].shape[0])
    return f"batch {b} (takes {n})" if b != n else None


def _hwc(g, op, limit):
    shape = g.tensors[op.inputs[0]].shape
    big = [int(v) for v in shape[1:] if int(v) > limit]
    return f"an axis of {big[0]} over {limit}" if big else None


def _wc(g, op, limit):
    a, b = (g.tensors[n] for n in op.inputs[:2])
    big = [int(v) for v in (a.shape[-1], b.shape[-1], a.shape[-2]) if int(v) > limit]
    return f"an axis of {big[0]} over {limit}" if big else None


def _axis_len(g, op, limit):
    n = int(g.tensors[op.inputs[0]].shape[int(op.attrs["axis"])])
    return f"a reduced axis of {n} over {limit}" if n > limit else None


def _upscale_pow2(g, op, limit):
    s = [int(v) for v in op.attrs["scale"]]
    if any(v not in [2**k for k in range(1, limit.bit_length())] for v in s):
        return f"upscale {s[0]}x{s[1]} (takes powers of two 2..{limit})"
    return None


_INT32_PERMS = {(0, 1, 2, 3), (0, 2, 1, 3), (0, 1, 3, 2), (0, 3, 2, 1)}


def _transpose(g, op, _):
    x = g.tensors[op.inputs[0]]
    perm = tuple(int(p) for p in op.attrs["perms"])
    if perm == tuple(range(len(perm))):
        return None
    shape = [int(v) for v in x.shape]
    if x.dtype == "int32":
        pad = 4 - len(perm)
        full = tuple(range(pad)) + tuple(p + pad for p in perm) if pad >= 0 else perm
        if len(perm) > 4 or full not in _INT32_PERMS:
            return f"int32 TRANSPOSE with permutation {list(perm)} (takes NHWC, NWHC, NHCW, NCWH)"
        return None
    rank = len(shape)
    if rank > 2:
        prods = [int(np.prod([shape[i] for i in range(rank) if i not in (j, k)])) for j in range(rank) for k in range(j + 1, rank)]
        if max(prods) > 1 << 16:
            return f"TRANSPOSE of {shape}: a product of {rank - 2} axes over 65536"
    return None


def _int48_with_producer(g, op, _):
    return None  # the partitioner keeps an int48 value inside the segment of the op that produces it


#: rule key -> check(g, op, limit) -> why the op breaks the rule, or None
CHECKS = {"dtypes": _dtypes, "kernel_area": _kernel_area, "kernel_h": _kernel_h, "kernel_pad": _kernel_pad,
          "stride": _stride, "channels": _channels, "abs_weight_sum": _abs_weight_sum, "bias_bits": _bias_bits,
          "batch": _batch, "hwc": _hwc, "wc": _wc, "axis_len": _axis_len, "upscale_pow2": _upscale_pow2,
          "transpose": _transpose, "int48_with_producer": _int48_with_producer}


def npu_refusal(g: Graph, op: Op, family: str) -> str | None:
    """Why ``op`` (of graph ``g``) cannot run on an NPU of ``family`` by :data:`TABLES` (one phrase, e.g.
    ``"REDUCE_MAX int32 -> int32 (takes int8 -> int8, int16 -> int16)"``), or None when it can.

    Raises:
        KeyError: an unknown family (the targets of :mod:`tabula.npu.targets` all have one)."""
    table = TABLES[family]
    rules = table.get(op.op, None)
    if rules is None:
        why = table.get("_why", {}).get(op.op)
        return why or f"{op.op} is not in the {family} table ({SOURCE})"
    for key, limit in rules.items():
        if key == "note":
            continue
        why = CHECKS[key](g, op, limit)
        if why:
            return f"{op.op} {why} ({family}, {SOURCE})"
    return None
