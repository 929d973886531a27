"""The TOSA 1.0 reader (tabula.tosa.read) on flatbuffers written with tosa-tools' own serializer, not by
tabula's export: what tabula implements reads into IR ops that compute what the TOSA reference model
computes; what it does not (RESCALE's DOUBLE_ROUND and INEXACT_ROUND, unsigned types, BILINEAR or
fractional RESIZE, BOOL tensors, an operator tabula lacks, a variant outside an op's contract) is one
Unsupported line naming the operator, the attribute and its value.  The round trip of whole models is in
test_tosa_export.py."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from tabula import tosa as T
from tabula.errors import IRError
from tabula.reference.interpreter import run_graph

pytestmark = pytest.mark.tosa


def _ts():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from serializer import tosa_serializer as ts
    from tosa.DType import DType
    from tosa.Op import Op

    return ts, DType, Op


class Block:
    """One TOSA 1.0.0 block built with the serializer: ``b.input``, ``b.const``, ``b.shape``, ``b.op``."""

    def __init__(self, version=(1, 0, 0)):
        self.ts, self.DType, self.Op = _ts()
        self.s = self.ts.TosaSerializer(".", tosa_version_major=version[0], tosa_version_minor=version[1],
                                        tosa_version_patch=version[2], tosa_version_draft=False)

    def input(self, shape, dtype):
        return self.s.addPlaceholder(list(shape), getattr(self.DType, dtype), None).name

    def const(self, values, dtype):
        v = np.asarray(values)
        return self.s.addConst(list(v.shape), getattr(self.DType, dtype), v).name

    def shape(self, values):
        v = np.asarray(values, dtype=np.int64)
        return self.s.addConst([v.size], self.DType.SHAPE, v).name

    def op(self, name, inputs, out_shape, out_dtype, kind, *args, intermediate=False):
        a = self.ts.TosaSerializerAttribute()
        getattr(a, f"{kind}Attribute")(*args)
        add = self.s.addIntermediate if intermediate else self.s.addOutput
        out = add(list(out_shape), getattr(self.DType, out_dtype)).name
        self.s.addOperator(getattr(self.Op, name), list(inputs), [out], a)
        return out

    def bytes(self) -> bytes:
        return bytes(self.s.serialize())


def _rescale(rounding="SINGLE_ROUND", input_unsigned=False, output_unsigned=False, multiplier=1 << 30, in_dt="INT32"):
    from tosa.RoundingMode import RoundingMode

    b = Block()
    x = b.input((2, 3), in_dt)
    ops = [x, b.const([multiplier], "INT32"), b.const([33], "INT8"), b.const([0], in_dt), b.const([3], "INT8")]
    b.op("RESCALE", ops, (2, 3), "INT8", "Rescale", True, getattr(RoundingMode, rounding), False, input_unsigned,
         output_unsigned)
    return b.bytes()


def test_a_rescale_reads_into_the_ir_and_computes_what_the_reference_model_computes(rng):
    fb = _rescale()
    g = T.read(fb)
    assert [o.op for o in g.ops] == ["RESCALE"]
    assert g.ops[0].attrs == {"input_zp": 0, "output_zp": 3, "multiplier": [1 << 30], "shift": [33], "scale32": True}
    x = rng.integers(-2**31, 2**31, (2, 3)).astype(np.int32)
    want = T.run(fb, [x])[0]
    assert want.min() < want.max()
    np.testing.assert_array_equal(run_graph(g, [x])[0], want.reshape(2, 3))


@pytest.mark.parametrize("kw,line", [
    ({"rounding": "DOUBLE_ROUND"}, "RESCALE: rounding_mode DOUBLE_ROUND is not supported (tabula rounds once, half toward +infinity: SINGLE_ROUND)"),
    ({"rounding": "INEXACT_ROUND"}, "RESCALE: rounding_mode INEXACT_ROUND is not supported (tabula rounds once, half toward +infinity: SINGLE_ROUND)"),
    ({"input_unsigned": True, "in_dt": "INT8"}, "RESCALE: input_unsigned True is not supported (tabula's types are signed)"),
    ({"output_unsigned": True}, "RESCALE: output_unsigned True is not supported (tabula's types are signed)"),
    ({"multiplier": 0}, "RESCALE: multiplier 0 is not supported (the IR refuses a 0 multiplier: every value would be the output zero point)"),
])
def test_rescale_variants_tabula_lacks_are_one_named_line(kw, line):
    with pytest.raises(T.Unsupported) as e:
        T.read(_rescale(**kw))
    assert str(e.value) == line and "\n" not in str(e.value)
    assert (e.value.op, e.value.attribute) == ("RESCALE", line.split()[1])


def test_an_operator_tabula_lacks_is_named():
    b = Block()
    x = b.input((4,), "INT32")
    b.op("ABS", [x], (4,), "INT32", "Abs")
    with pytest.raises(T.Unsupported, match=r"^ABS: tabula has no such op \(it reads ADD, ARGMAX, AVG_POOL2D, .*, SELECT, .*, TRANSPOSE\b.*\)$"):
        T.read(b.bytes())


def test_a_bool_tensor_is_named_with_its_dtype():
    b = Block()
    x, y = b.input((2, 2), "BOOL"), b.input((2, 2), "BOOL")
    b.op("CONCAT", [x, y], (4, 2), "BOOL", "Concat", 0)
    with pytest.raises(T.Unsupported, match=r"^CONCAT: input-0 dtype BOOL is not supported \(the IR holds bool only as the "
                                            r"int8 mask of a comparison's output and SELECT's condition\)$"):
        T.read(b.bytes())


def test_bool_is_the_mask_of_a_comparison_and_a_select_and_the_casts_between_are_aliases(rng):
    """GREATER's BOOL output (here a block output) and SELECT's BOOL condition (a block input) read as the IR's
    int8 mask; CAST BOOL -> INT8 -> BOOL between a comparison and SELECT reads as aliases; the graph on tabula's
    reference equals it on the TOSA reference model."""
    b = Block()
    x, y, c = b.input((2, 3), "INT32"), b.input((1, 3), "INT32"), b.input((2, 1), "BOOL")
    gt = b.op("GREATER", [x, y], (2, 3), "BOOL", "Greater")  # a block output
    m8 = b.op("CAST", [gt], (2, 3), "INT8", "Cast", intermediate=True)
    back = b.op("CAST", [m8], (2, 3), "BOOL", "Cast", intermediate=True)
    sel = b.op("SELECT", [back, x, y], (2, 3), "INT32", "Select", intermediate=True)
    b.op("SELECT", [c, sel, b.const(np.zeros((1, 1)), "INT32")], (2, 3), "INT32", "Select")
    fb = b.bytes()
    g = T.read(fb)
    assert [o.op for o in g.ops] == ["GREATER", "SELECT", "SELECT"]
    assert g.tensors[g.inputs[2]].dtype == "int8" and g.tensors[g.outputs[0]].dtype == "int8"
    ins = [rng.integers(-3, 3, (2, 3)).astype(np.int32), rng.integers(-3, 3, (1, 3)).astype(np.int32), np.array([[1], [0]], np.int8)]
    mine = run_graph(g, ins)
    theirs = T.run(fb, [ins[0], ins[1], ins[2].astype(bool)])
    for a, t in zip(mine, theirs):
        np.testing.assert_array_equal(a, np.asarray(t).astype(a.dtype).reshape(a.shape))


def test_casts_and_bool_operands_tabula_lacks_are_named():
    b = Block()
    x = b.input((4,), "INT8")
    b.op("CAST", [x], (4,), "INT16", "Cast")
    with pytest.raises(T.Unsupported, match=r"^CAST: INT8 -> INT16 \(tabula reads CAST only between BOOL and its int8 mask\)$"):
        T.read(b.bytes())
    b = Block()
    x = b.input((4,), "INT8")
    b.op("CAST", [x], (4,), "BOOL", "Cast")  # a block output: not SELECT's condition
    with pytest.raises(T.Unsupported, match=r"^CAST: INT8 -> BOOL of a tensor that is not a mask"):
        T.read(b.bytes())
    b = Block()
    c, x = b.input((4,), "BOOL"), b.input((4,), "BOOL")
    b.op("SELECT", [c, x, x], (4,), "BOOL", "Select")
    with pytest.raises(T.Unsupported, match=r"^SELECT: input-1 dtype BOOL is not supported"):
        T.read(b.bytes())


def test_variants_outside_an_ops_contract_say_which_rule():
    b = Block()
    x, y = b.input((2, 3), "INT32"), b.input((1, 3), "INT32")
    b.op("INTDIV", [x, y], (2, 3), "INT32", "IntDiv")
    with pytest.raises(T.Unsupported, match=r"^INTDIV: outside tabula's INTDIV contract: shapes \(2, 3\) and \(1, 3\) differ"):
        T.read(b.bytes())
    b = Block()
    x, y = b.input((2, 3), "INT8"), b.input((2, 3), "INT8")
    b.op("MUL", [x, y, b.const([0], "INT8")], (2, 3), "INT32", "Mul")
    with pytest.raises(T.Unsupported, match=r"^MUL: outside tabula's MUL contract: dtypes must be int32, int32 \(got int8, int8\)$"):
        T.read(b.bytes())


def _resize(mode: str, scale, offset, border, out_hw, dtype="INT8"):
    from tosa.ResizeMode import ResizeMode

    b = Block()
    x = b.input((1, 3, 4, 2), dtype)
    out_dt = dtype if mode == "NEAREST" else {"INT8": "INT32", "INT16": "INT48"}[dtype]
    b.op("RESIZE", [x, b.shape(scale), b.shape(offset), b.shape(border)], (1, *out_hw, 2), out_dt, "Resize",
         getattr(ResizeMode, mode))
    return b.bytes()


@pytest.mark.parametrize("scale,offset,border,out_hw,ops", [
    ([6, 2, 4, 2], [-2, -1], [2, 1], (9, 8), {"RESIZE": [3, 2]}),   # the export's form, 2s / 2, 1 - s, s - 1
    ([2, 1, 2, 1], [-1, -1], [0, 0], (6, 8), {"RESIZE": [2, 2]}),   # 2 / 1, offset -1: the same floor
    ([2, 2, 2, 2], [0, 0], [0, 0], (3, 4), {"RESIZE": [1, 1]}),
    ([1, 1, 1, 1], [0, 0], [0, 0], (3, 4), {"RESIZE": [1, 1]}),
    ([2, 1, 3, 1], [0, 0], [0, 0], (5, 10), {"RESIZE": [2, 3], "SLICE": [0, 1, 1, 0]}),  # half up: (oy + 1) // 2
    ([4, 1, 4, 1], [-1, -1], [1, 1], (11, 15), {"RESIZE": [4, 4], "SLICE": [0, 1, 1, 0]}),
])
def test_a_nearest_resize_of_integer_scale_reads_as_a_repeat_and_equals_the_reference_model(rng, scale, offset, border, out_hw, ops):
    """TOSA's NEAREST rounds half up; an integer upscale reads input row ``(oy + t) // s``: RESIZE repeats by
    ``s`` (tabula's kernel), a SLICE drops ``t`` rows where ``t`` is not 0."""
    fb = _resize("NEAREST", scale, offset, border, out_hw)
    g = T.read(fb)
    assert [o.op for o in g.ops] == list(ops)
    assert g.ops[0].attrs == {"mode": "NEAREST", "scale": ops["RESIZE"]}
    if "SLICE" in ops:
        assert g.ops[1].attrs == {"start": ops["SLICE"], "size": [1, *out_hw, 2]}
    x = rng.integers(-128, 128, (1, 3, 4, 2)).astype(np.int8)
    want = T.run(fb, [x])[0].reshape(1, *out_hw, 2)
    assert len(np.unique(want)) > 12
    np.testing.assert_array_equal(run_graph(g, [x])[0], want)


@pytest.mark.parametrize("mode,scale,offset,border,out_hw,line", [
    ("BILINEAR", [2, 1, 2, 1], [0, 0], [1, 1], (6, 8), "RESIZE: mode BILINEAR is not supported (tabula's RESIZE is NEAREST)"),
    ("NEAREST", [2, 1, 2, 1], [0, 0], [1, 1], (6, 8), "RESIZE: scale / offset / border [2, 1, 2, 1] / [0, 0] / [1, 1] is not "
     "supported (tabula's RESIZE repeats each input row and column an integer number of times)"),  # rounds 1/2 up
    ("NEAREST", [1, 2, 1, 2], [0, 0], [0, 0], (2, 2), "RESIZE: scale / offset / border [1, 2, 1, 2] / [0, 0] / [0, 0] is not "
     "supported (tabula's RESIZE repeats each input row and column an integer number of times)"),  # downscaling
])
def test_resizes_that_are_not_a_repeat_are_named(mode, scale, offset, border, out_hw, line):
    with pytest.raises(T.Unsupported) as e:
        T.read(_resize(mode, scale, offset, border, out_hw))
    assert str(e.value) == line


def test_a_bias_of_one_value_is_broadcast_over_the_output_channels(rng):
    """TOSA 1.0 lets CONV2D's bias be ``[1]``; the IR's is ``[Cout]``: the reader broadcasts the constant."""
    from tosa.DType import DType

    b = Block()
    x = b.input((1, 5, 6, 3), "INT8")
    w = rng.integers(-128, 128, (4, 3, 3, 3)).astype(np.int8)
    ops = [x, b.const(w, "INT8"), b.const(np.array([-777], np.int32), "INT32"), b.const([-9], "INT8"), b.const([4], "INT8")]
    b.op("CONV2D", ops, (1, 4, 5, 4), "INT32", "Conv2d", [1, 0, 0, 1], [1, 1], [1, 1], False, DType.INT32)
    fb = b.bytes()
    g = T.read(fb)
    conv = g.ops[0]
    assert conv.attrs == {"pad": [1, 0, 0, 1], "stride": [1, 1], "dilation": [1, 1], "input_zp": -9, "weight_zp": 4}
    np.testing.assert_array_equal(g.constants[conv.inputs[2]], np.full(4, -777, np.int32))
    xv = rng.integers(-128, 128, (1, 5, 6, 3)).astype(np.int8)
    np.testing.assert_array_equal(run_graph(g, [xv])[0], T.run(fb, [xv])[0].reshape(1, 4, 5, 4))


def test_a_wrong_accumulator_type_is_named():
    from tosa.DType import DType

    b = Block()
    x = b.input((1, 2, 2, 1), "INT8")
    ops = [x, b.const(np.ones((1, 1, 1, 1), np.int8), "INT8"), b.const(np.zeros(1, np.int64), "INT48"),
           b.const([0], "INT8"), b.const([0], "INT8")]
    b.op("CONV2D", ops, (1, 2, 2, 1), "INT48", "Conv2d", [0, 0, 0, 0], [1, 1], [1, 1], False, DType.INT48)
    with pytest.raises(T.Unsupported, match=r"^CONV2D: acc_type INT48 is not supported \(tabula accumulates int8 inputs in int32\)$"):
        T.read(b.bytes())


def test_another_tosa_version_and_a_damaged_buffer_are_one_line_each():
    b = Block(version=(1, 1, 0))
    x = b.input((4,), "INT32")
    b.op("ADD", [x, x], (4,), "INT32", "Add")
    with pytest.raises(T.Unsupported, match=r"^graph: TOSA version 1\.1\.0 is not supported \(tabula reads TOSA 1\.0\)$"):
        T.read(b.bytes())
    with pytest.raises(IRError, match=r"^not a TOSA flatbuffer"):
        T.read(b"\x00\x01garbage")


def test_nearest_rows_is_the_reference_models_nearest_rounding():
    """The row map the reader checks a RESIZE against (resize.nearest_rows) equals what the TOSA reference
    model reads, on every valid scale / offset / border of a 5-row input with scale_n <= 5, scale_d <= 3."""
    from tosa.ResizeMode import ResizeMode

    from tabula.reference.ops.resize import nearest_rows

    h, checked = 5, 0
    for n in range(1, 6):
        for d in range(1, 4):
            for off in range(-n, 3):
                for border in range(-n + 1, n):
                    num = (h - 1) * n - off + border
                    if num % d or num // d + 1 < 1:
                        continue
                    oh = num // d + 1
                    b = Block()
                    x = b.input((1, h, 1, 1), "INT8")
                    b.op("RESIZE", [x, b.shape([n, d, 2, 2]), b.shape([off, 0]), b.shape([border, 0])], (1, oh, 1, 1), "INT8",
                         "Resize", ResizeMode.NEAREST)
                    got = T.run(b.bytes(), [np.arange(h, dtype=np.int8).reshape(1, h, 1, 1)])[0].reshape(-1)
                    np.testing.assert_array_equal(nearest_rows(h, oh, n, d, off), got, err_msg=f"{n}/{d} {off} {border}")
                    checked += 1
    assert checked > 100


@pytest.mark.parametrize("dt", ["int8", "int16"])
def test_transpose_conv2d_reads_back_what_the_export_wrote(rng, dt):
    """TRANSPOSE_CONV2D (the newest op) export -> read: the same attributes and constants, and the read graph
    on tabula's reference equals the flatbuffer on TOSA's."""
    from tabula import dtypes
    from tabula.ir import Graph, Op, Tensor

    acc = dtypes.ACC_DTYPE[dt]
    lo, hi = dtypes.range_of(dt)
    x = rng.integers(lo, hi, (1, 3, 4, 5), endpoint=True).astype(dtypes.get(dt).np)
    w = rng.integers(-127, 127, (6, 3, 2, 5), endpoint=True).astype(np.int8)
    b = rng.integers(-9000, 9000, 6).astype(dtypes.get(acc).np)
    attrs = {"out_pad": [-1, 0, 1, -1], "stride": [2, 3], "input_zp": -7 if dt == "int8" else 0, "weight_zp": 3}
    g = Graph(inputs=["x"], outputs=["y"])
    g.add_tensor(Tensor("x", x.shape, dt))
    g.add_tensor(Tensor("w", w.shape, "int8"), w)
    g.add_tensor(Tensor("b", b.shape, acc), b)
    g.add_tensor(Tensor("y", (1, 6, 11, 6), acc))
    g.add_op(Op("TRANSPOSE_CONV2D", ["x", "w", "b"], ["y"], attrs))
    fb = T.serialize(g)
    g2 = T.read(fb)
    (op,) = g2.ops
    assert op.op == "TRANSPOSE_CONV2D" and op.attrs == attrs
    np.testing.assert_array_equal(g2.constants[op.inputs[1]], w)
    np.testing.assert_array_equal(g2.constants[op.inputs[2]], b)
    want = run_graph(g, [x])[0]
    assert want.min() < want.max()
    np.testing.assert_array_equal(run_graph(g2, [x])[0], want)
    if dt == "int8":  # the reference model's binding returns no int48 tensor
        np.testing.assert_array_equal(T.run(fb, [x])[0].reshape(want.shape), want)
