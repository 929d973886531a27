"""Run an IR graph through tabula's C kernels, one kernel call per IR op (the system under test of
:mod:`tabula.tosa.sut`).

``lib`` is a kernel library with the host wrappers' methods -- the host shared library (the kernels
compiled with ``cc``, called through ctypes) or the device harness (the same methods, each call run on
an emulated Cortex-M under QEMU): every value of the result is computed by our C, from the IR op's
attributes exactly as codegen passes them, without the fused epilogues (an accumulator op writes its
int32 / int48 accumulator, as TOSA defines the op).  Only RESHAPE has no kernel: it keeps the bytes
(codegen aliases the buffer or copies it).

:func:`unsupported` names what the C kernels do not take (e.g. a RESCALE of a dtype pair without a
kernel) before anything runs; :func:`run_graph` runs the graph.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .. import dtypes
from ..ir import Graph, Op

Call = Callable[[object, list[np.ndarray], dict], np.ndarray]


def _window(a: dict) -> dict:
    return {"pad": [int(v) for v in a["pad"]], "stride": [int(v) for v in a["stride"]],
            "dilation": [int(v) for v in a.get("dilation", (1, 1))]}


def _binary(name: str) -> Call:
    def call(lib, ins, a):
        x, y = ins
        extra = (int(a.get("shift", 0)),) if name == "mul" else ()
        same = tuple(x.shape) == tuple(y.shape)
        return getattr(lib, name if same else f"{name}_bcast")(x, y, *extra)
    return call


def _rescale(lib, ins, a):
    return lib.rescale(ins[0], input_zp=int(a.get("input_zp", 0)), output_zp=int(a.get("output_zp", 0)),
                       multiplier=[int(v) for v in a["multiplier"]], shift=[int(v) for v in a["shift"]],
                       output_dtype=a["output_dtype"])


def _transpose_conv2d(lib, ins, a):
    """``tabula_transpose_conv2d_<s8|s16>`` by name (``lib.call``, numpy arrays; the harness has no op wrapper)."""
    x, w, b = (np.ascontiguousarray(v) for v in ins)
    n, ih, iw, ic = x.shape
    oc, kh, kw, _ = w.shape
    pt, pb, pl, pr = (int(v) for v in a["out_pad"])
    sy, sx = (int(v) for v in a["stride"])
    oh, ow = (ih - 1) * sy + pt + pb + kh, (iw - 1) * sx + pl + pr + kw
    out = np.empty((n, oh, ow, oc), dtypes.get(a["output_dtype"]).np)
    lib.call(f"tabula_transpose_conv2d_{dtypes.of(x).sfx}", n, ih, iw, ic, oh, ow, oc, kh, kw, sy, sx, pt, pl, x,
             int(a.get("input_zp", 0)), w, int(a.get("weight_zp", 0)), b, out)
    return out


def _bcast(kernel: str) -> Call:
    """A broadcasting binary kernel of issue 25 (``tabula_<kernel>_<sfx>(a, a_shape, b, b_shape, rank, out)``:
    MAXIMUM, the comparisons, the bitwise ops, LOGICAL_LEFT_SHIFT), the shapes merged as codegen merges them
    (rank 0 is one element)."""
    from ..codegen.ops._broadcast import collapse

    def call(lib, ins, a):
        x, y = (np.ascontiguousarray(v) for v in ins)
        sa, sb = collapse(x.shape, y.shape)
        out = np.empty(np.broadcast_shapes(x.shape, y.shape), dtypes.get(a["output_dtype"]).np)
        lib.call(f"tabula_{kernel}_{dtypes.of(x).sfx}", x, sa, y, sb, len(sa), out)
        return out
    return call


def _select(lib, ins, a):
    c, x, y = (np.ascontiguousarray(v) for v in ins)
    shapes = [list(v.shape) or [1] for v in (c, x, y)]
    out = np.empty(np.broadcast_shapes(c.shape, x.shape, y.shape), x.dtype)
    lib.call("tabula_select", c, shapes[0], x, shapes[1], y, shapes[2], len(shapes[0]), x.itemsize, out)
    return out


def _around(shape, axis: int) -> tuple[int, int, int]:
    """``(outer, axis_len, inner)``: the dims before ``axis``, its length, the dims after it."""
    shape = [int(d) for d in shape]
    return int(np.prod(shape[:axis], dtype=np.int64)), shape[axis], int(np.prod(shape[axis + 1:], dtype=np.int64))


def _reverse(lib, ins, a):
    x = np.ascontiguousarray(ins[0])
    outer, n, inner = _around(x.shape, int(a["axis"]))
    out = np.empty(x.shape, x.dtype)
    lib.call("tabula_reverse", x, outer, n, inner * x.itemsize, out)
    return out


def _reduce(kernel: str) -> Call:
    """``tabula_<kernel>_<sfx>(x, outer, axis_len, inner, out)`` (REDUCE_MIN; ARGMAX, int32 out)."""
    def call(lib, ins, a):
        x = np.ascontiguousarray(ins[0])
        outer, n, inner = _around(x.shape, int(a["axis"]))
        out = np.empty(outer * inner, dtypes.get(a["output_dtype"]).np)
        lib.call(f"tabula_{kernel}_{dtypes.of(x).sfx}", x, outer, n, inner, out)
        return out
    return call


#: IR op -> its kernel call: ``call(lib, input arrays, attrs + output_dtype) -> output array``.
CALLS: dict[str, Call] = {
    "ADD": _binary("add"),
    "SUB": _binary("sub"),
    "MUL": _binary("mul"),
    "INTDIV": lambda lib, ins, a: lib.intdiv(*ins),
    "CLAMP": lambda lib, ins, a: lib.clamp(ins[0], int(a["min"]), int(a["max"])),
    "CONCAT": lambda lib, ins, a: lib.concat(ins, int(a["axis"])),
    "CONV2D": lambda lib, ins, a: lib.conv2d(*ins, **_window(a), input_zp=int(a.get("input_zp", 0)),
                                             weight_zp=int(a.get("weight_zp", 0))),
    "DEPTHWISE_CONV2D": lambda lib, ins, a: lib.depthwise_conv2d(*ins, **_window(a), input_zp=int(a.get("input_zp", 0)),
                                                                 weight_zp=int(a.get("weight_zp", 0))),
    "FULLY_CONNECTED": lambda lib, ins, a: lib.fully_connected(*ins, input_zp=int(a.get("input_zp", 0)),
                                                               weight_zp=int(a.get("weight_zp", 0))),
    "MATMUL": lambda lib, ins, a: lib.matmul(*ins, a_zp=int(a.get("a_zp", 0)), b_zp=int(a.get("b_zp", 0))),
    "MAX_POOL2D": lambda lib, ins, a: lib.max_pool2d(ins[0], kernel=list(a["kernel"]), stride=list(a["stride"]),
                                                     pad=list(a["pad"])),
    "AVG_POOL2D": lambda lib, ins, a: lib.avg_pool2d(ins[0], kernel=list(a["kernel"]), stride=list(a["stride"]),
                                                     pad=list(a["pad"]), input_zp=int(a.get("input_zp", 0)),
                                                     output_zp=int(a.get("output_zp", 0))),
    "PAD": lambda lib, ins, a: lib.pad(ins[0], list(a["pad_before"]), list(a["pad_after"]), int(a["pad_value"])),
    "REDUCE_MAX": lambda lib, ins, a: lib.reduce_max(ins[0], int(a["axis"])),
    "REDUCE_SUM": lambda lib, ins, a: lib.reduce_sum(ins[0], int(a["axis"])),
    "RESCALE": _rescale,
    "RESHAPE": lambda lib, ins, a: np.ascontiguousarray(ins[0]).reshape([int(v) for v in a["shape"]]),
    "RESIZE": lambda lib, ins, a: lib.resize_nearest(ins[0], [int(v) for v in a["scale"]]),
    "SLICE": lambda lib, ins, a: lib.slice(ins[0], list(a["start"]), list(a["size"])),
    "TABLE": lambda lib, ins, a: lib.table(*ins),
    "TILE": lambda lib, ins, a: lib.tile(ins[0], list(a["multiples"])),
    "TRANSPOSE": lambda lib, ins, a: lib.transpose(ins[0], list(a["perms"])),
    "TRANSPOSE_CONV2D": _transpose_conv2d,
    "MAXIMUM": _bcast("maximum"),
    "MINIMUM": _bcast("minimum"),
    "GREATER": _bcast("greater"),
    "GREATER_EQUAL": _bcast("greater_equal"),
    "EQUAL": _bcast("equal"),
    "BITWISE_AND": _bcast("bitwise_and"),
    "BITWISE_OR": _bcast("bitwise_or"),
    "BITWISE_XOR": _bcast("bitwise_xor"),
    "LOGICAL_LEFT_SHIFT": _bcast("logical_left_shift"),
    "SELECT": _select,
    "REVERSE": _reverse,
    "REDUCE_MIN": _reduce("reduce_min"),
    "ARGMAX": _reduce("argmax"),
    "GATHER": lambda lib, ins, a: lib.gather(*ins),
}


def unsupported(g: Graph, kernel_names: set[str]) -> str | None:
    """Why the C kernels cannot run ``g`` (one line naming the op and what it lacks), or None.

    ``kernel_names``: the manifest's kernels (:func:`tabula.kernels.names`).  What the kernels do not
    take, although the IR does: a RESCALE whose dtype pair has no ``tabula_rescale_<in>_<out>``; a
    TRANSPOSE of 8-byte elements (``tabula_transpose`` moves 1, 2 or 4); a SLICE, PAD, TILE or
    broadcasting ADD / SUB / MUL of rank 0 (those kernels take ranks 1 to 6)."""
    for op in g.ops:
        if op.op not in CALLS:
            return f"{op.op}: no kernel call (tabula.tosa.kernel_calls has {', '.join(sorted(CALLS))})"
        x = g.tensors[op.inputs[0]]
        y = g.tensors[op.outputs[0]]
        if op.op == "RESCALE":
            name = f"tabula_rescale_{dtypes.get(x.dtype).sfx}_{dtypes.get(y.dtype).sfx}"
            if name not in kernel_names:
                return f"RESCALE: {x.dtype} -> {y.dtype} has no C kernel ({name} is not in the manifest)"
        if op.op == "TRANSPOSE" and x.itemsize not in (1, 2, 4):
            return f"TRANSPOSE: {x.dtype} elements of {x.itemsize} bytes (tabula_transpose moves 1, 2 or 4)"
        ranked = op.op in ("SLICE", "PAD", "TILE") or (
            op.op in ("ADD", "SUB", "MUL") and tuple(x.shape) != tuple(g.tensors[op.inputs[1]].shape))
        if ranked and len(x.shape) == 0:
            return f"{op.op}: rank 0 (the kernel takes ranks 1 to 6)"
    return None


def run_op(lib, g: Graph, op: Op, env: dict[str, np.ndarray]) -> np.ndarray:
    """One IR op through its kernel call, reading its inputs from ``env`` (tensor name -> array); the result
    has the IR output tensor's shape and dtype (KeyError for an op without a call, :func:`unsupported`)."""
    out = g.tensors[op.outputs[0]]
    y = CALLS[op.op](lib, [env[n] for n in op.inputs], {**op.attrs, "output_dtype": out.dtype})
    return np.asarray(y).reshape(out.shape)


def run_graph(lib, g: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """``g`` on ``inputs`` (one array per graph input, its IR shape and dtype), every op one kernel call of
    ``lib`` in graph order; returns the graph outputs.  A kernel's non-OK status raises the library's
    KernelError; ValueError for inputs of the wrong shape or dtype."""
    env: dict[str, np.ndarray] = dict(g.constants)
    if len(inputs) != len(g.inputs):
        raise ValueError(f"the graph has {len(g.inputs)} inputs, got {len(inputs)} arrays")
    for n, a in zip(g.inputs, inputs):
        t = g.tensors[n]
        a = np.asarray(a)
        if tuple(a.shape) != tuple(t.shape) or a.dtype != t.np_dtype:
            raise ValueError(f"graph input {n}: expected {t.dtype} {tuple(t.shape)}, got {a.dtype} {tuple(a.shape)}")
        env[n] = np.ascontiguousarray(a)
    for op in g.ops:
        env[op.outputs[0]] = run_op(lib, g, op, env)
    return [env[n] for n in g.outputs]
