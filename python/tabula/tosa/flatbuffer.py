"""IR graph -> TOSA 1.0 flatbuffer (tosa-tools' ``serializer.tosa_serializer``) and back through the
TOSA reference model (``tosa_reference_model.run``).

Mapping (TOSA 1.0 operands are tensors, not attributes):

``TABLE``    inputs ``x``, ``table`` (CONST); int8 -> int8, int16 -> int32.
``RESCALE``  inputs ``x``, ``multiplier`` (CONST int32 [C or 1]; int16 when ``scale32`` is false),
             ``shift`` (CONST int8), ``input_zp`` (CONST [1] of the input type), ``output_zp`` (CONST [1]
             of the output type); attributes ``scale32``, ``rounding_mode = SINGLE_ROUND`` (tabula never
             double-rounds), ``per_channel = len(multiplier) > 1``, signed input and output.
``ADD``/``SUB`` inputs ``a``, ``b`` (int32, same shape) -> int32.
``MUL``      inputs ``a``, ``b`` (int32, same shape), ``shift`` (CONST int8 [1]) -> int32.
``INTDIV``   inputs ``a``, ``b`` (int32, same shape) -> int32.
``REDUCE_MAX`` / ``REDUCE_SUM``  input ``x``; attribute ``axis`` (REDUCE_MAX: ``nan_mode`` PROPAGATE,
             which integers ignore).
``TILE``     inputs ``x``, ``multiples`` (CONST_SHAPE).
``DEPTHWISE_CONV2D`` inputs ``x``, ``w`` (CONST int8 [KH, KW, C, M]), ``b`` (CONST [C*M]), ``input_zp``,
             ``weight_zp`` (CONST [1]); attributes ``pad``, ``stride``, ``dilation``, ``local_bound``
             false, ``acc_type`` int32 (int8 x) or int48 (int16 x).  (The reference model's Python
             binding cannot return an INT48 tensor: read such a result through a RESCALE.)
``MATMUL``   inputs ``a`` [N,H,C], ``b`` [N,C,W], ``a_zp``, ``b_zp`` (CONST [1] of the input type) -> int32
             (int8) or int48 (int16).
IR ``int64`` (TOSA int48 accumulators) maps to ``INT48``.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..errors import IRError, TabulaError
from ..ir import Graph

SUPPORTED_OPS = ("TABLE", "RESCALE", "ADD", "SUB", "MUL", "INTDIV", "REDUCE_MAX", "REDUCE_SUM", "TILE", "DEPTHWISE_CONV2D",
                 "MATMUL")


class TosaError(TabulaError, RuntimeError):
    """The TOSA reference model rejected or failed a graph."""


def unavailable() -> str | None:
    """None when tosa-tools (serializer + reference model) imports, else the exact reason."""
    try:
        _modules()
    except Exception as e:  # noqa: BLE001 - any import failure is the reason we report
        return f"tosa-tools is not usable here: {type(e).__name__}: {e} (pip install tosa-tools)"
    return None


def _modules():
    with warnings.catch_warnings():  # tosa-tools marks its pure-Python `serializer` package deprecated
        warnings.simplefilter("ignore", DeprecationWarning)
        from serializer import tosa_serializer as ts
    import tosa_reference_model
    from tosa.DType import DType
    from tosa.NanPropagationMode import NanPropagationMode
    from tosa.Op import Op
    from tosa.RoundingMode import RoundingMode

    return ts, tosa_reference_model, DType, Op, RoundingMode, NanPropagationMode


def _exact_pad(op, size, kernel, a) -> list[int]:
    """TOSA 1.0 wants ``(size + pad_before + pad_after - d*(k-1) - 1) % stride == 0`` on each axis
    (ERROR_IF); the IR, like PyTorch, floors.  The trailing ``r`` rows / columns of the padded input
    that no window reads are dropped from the bottom / right padding, which leaves every window and
    the output as they are; IRError when they include real input (TOSA would need a SLICE first)."""
    pad = [int(v) for v in a["pad"]]
    for axis in range(2):
        d, s_ = int(a.get("dilation", (1, 1))[axis]), int(a["stride"][axis])
        r = (size[axis] + pad[2 * axis] + pad[2 * axis + 1] - d * (kernel[axis] - 1) - 1) % s_
        if r > pad[2 * axis + 1]:
            raise IRError(f"{op.op} ({op.source or 'no source'}): the last {r - pad[2 * axis + 1]} input "
                          f"{'rows' if axis == 0 else 'columns'} are read by no window; TOSA needs them sliced off "
                          "first (not serialized yet)")
        pad[2 * axis + 1] -= r
    return pad


def serialize(g: Graph) -> bytes:
    """The TOSA flatbuffer of ``g``: graph inputs become placeholders (in ``g.inputs`` order), IR
    constants become CONST ops, ``g.outputs`` the block outputs.  Raises :class:`IRError` naming any
    op outside :data:`SUPPORTED_OPS`."""
    ts, _, DType, Op, RoundingMode, NanPropagationMode = _modules()
    dt = {"int8": DType.INT8, "int16": DType.INT16, "int32": DType.INT32, "int48": DType.INT48}
    other = sorted({o.op for o in g.ops} - set(SUPPORTED_OPS))
    if other:
        raise IRError(f"no TOSA serialization for IR ops {', '.join(other)} (supported: {', '.join(SUPPORTED_OPS)})")
    s = ts.TosaSerializer(".")
    name: dict[str, str] = {}

    def const(shape, dtype, values) -> str:
        return s.addConst(list(shape), dtype, np.asarray(values)).name

    for n in g.inputs:
        t = g.tensors[n]
        name[n] = s.addPlaceholder(list(t.shape), dt[t.dtype], None).name
    for n, arr in g.constants.items():
        t = g.tensors[n]
        name[n] = const(t.shape, dt[t.dtype], arr.reshape(-1))
    outputs = set(g.outputs)
    for op in g.ops:
        (out_name,) = op.outputs
        out = g.tensors[out_name]
        if out_name in outputs:
            name[out_name] = s.addOutput(list(out.shape), dt[out.dtype]).name
        else:
            name[out_name] = s.addIntermediate(list(out.shape), dt[out.dtype]).name
        x = g.tensors[op.inputs[0]]
        attr = ts.TosaSerializerAttribute()
        if op.op == "TABLE":
            attr.TableAttribute()
            s.addOperator(Op.TABLE, [name[op.inputs[0]], name[op.inputs[1]]], [name[out_name]], attr)
        elif op.op in ("ADD", "SUB"):
            getattr(attr, f"{op.op.capitalize()}Attribute")()
            s.addOperator(getattr(Op, op.op), [name[op.inputs[0]], name[op.inputs[1]]], [name[out_name]], attr)
        elif op.op == "INTDIV":
            attr.IntDivAttribute()
            s.addOperator(Op.INTDIV, [name[op.inputs[0]], name[op.inputs[1]]], [name[out_name]], attr)
        elif op.op == "REDUCE_MAX":
            attr.ReduceMaxAttribute(int(op.attrs["axis"]), NanPropagationMode.PROPAGATE)
            s.addOperator(Op.REDUCE_MAX, [name[op.inputs[0]]], [name[out_name]], attr)
        elif op.op == "REDUCE_SUM":
            attr.ReduceSumAttribute(int(op.attrs["axis"]))
            s.addOperator(Op.REDUCE_SUM, [name[op.inputs[0]]], [name[out_name]], attr)
        elif op.op == "TILE":
            attr.TileAttribute()
            mult = const([len(x.shape)], DType.SHAPE, np.asarray(op.attrs["multiples"], dtype=np.int64))
            s.addOperator(Op.TILE, [name[op.inputs[0]], mult], [name[out_name]], attr)
        elif op.op == "MUL":
            attr.MulAttribute()
            shift = const([1], DType.INT8, np.array([op.attrs.get("shift", 0)], dtype=np.int8))
            s.addOperator(Op.MUL, [name[op.inputs[0]], name[op.inputs[1]], shift], [name[out_name]], attr)
        elif op.op == "DEPTHWISE_CONV2D":
            a = op.attrs
            izp = const([1], dt[x.dtype], np.array([a.get("input_zp", 0)], dtype=np.int64))
            wzp = const([1], DType.INT8, np.array([a.get("weight_zp", 0)], dtype=np.int64))
            kernel = g.tensors[op.inputs[1]].shape[:2]
            pad = _exact_pad(op, x.shape[1:3], kernel, a)
            attr.DepthwiseConv2dAttribute(pad, list(a["stride"]), list(a.get("dilation", (1, 1))), False, dt[out.dtype])
            s.addOperator(Op.DEPTHWISE_CONV2D, [name[n] for n in op.inputs] + [izp, wzp], [name[out_name]], attr)
        elif op.op == "MATMUL":
            attr.MatMulAttribute()
            zps = [const([1], dt[x.dtype], np.array([op.attrs.get(k, 0)], dtype=np.int64)) for k in ("a_zp", "b_zp")]
            s.addOperator(Op.MATMUL, [name[op.inputs[0]], name[op.inputs[1]], *zps], [name[out_name]], attr)
        else:  # RESCALE
            a = op.attrs
            scale32 = bool(a.get("scale32", True))
            m = np.atleast_1d(np.asarray(a["multiplier"], dtype=np.int64))
            sh = np.atleast_1d(np.asarray(a["shift"], dtype=np.int64))
            mult = const([m.size], DType.INT32 if scale32 else DType.INT16, m.astype(np.int32 if scale32 else np.int16))
            shift = const([sh.size], DType.INT8, sh.astype(np.int8))
            izp = const([1], dt[x.dtype], np.array([a.get("input_zp", 0)], dtype=np.int64))
            ozp = const([1], dt[out.dtype], np.array([a.get("output_zp", 0)], dtype=np.int64))
            attr.RescaleAttribute(scale32, RoundingMode.SINGLE_ROUND, bool(m.size > 1), False, False)
            s.addOperator(Op.RESCALE, [name[op.inputs[0]], mult, shift, izp, ozp], [name[out_name]], attr)
    return bytes(s.serialize())


def run(flatbuffer: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Run a TOSA flatbuffer on the official reference model; inputs in placeholder order.
    Raises :class:`TosaError` when the graph status is not ``TOSA_VALID`` (an ERROR_IF or REQUIRE hit)."""
    _, trm, *_ = _modules()
    outs, status = trm.run(flatbuffer, [np.ascontiguousarray(a) for a in inputs])
    if status != trm.GraphStatus.TOSA_VALID:
        raise TosaError(f"TOSA reference model: {status}")
    return [np.asarray(o) for o in outs]


def run_graph(g: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """:func:`serialize` then :func:`run`; outputs in ``g.outputs`` order, reshaped to their IR shapes."""
    outs = run(serialize(g), inputs)
    return [o.reshape(g.tensors[n].shape) for o, n in zip(outs, g.outputs)]
