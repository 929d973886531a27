"""Requantization fused into the accumulator kernels' epilogue (the ``requant`` block of
tabula_conv2d_<t> / tabula_fully_connected_<t>): C == the IR sequence CONV2D / FULLY_CONNECTED ->
RESCALE -> CLAMP through the Python reference, bit for bit, on random and edge inputs (zero points at
the int8 ends, saturation, rounding ties, per-channel multipliers and shifts at their extremes, CLAMP
bounds inside the range); bad blocks are refused; and codegen's :func:`fuse_requant` builds the block
the sequence implies, or leaves the sequence alone."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from tabula import requant
from tabula.codegen.fusion import fuse_requant
from tabula.ir import Graph, Op, Tensor
from tabula.reference.ops import clamp, conv2d, depthwise_conv2d, fully_connected, rescale


def _sequence(acc: np.ndarray, block: np.ndarray, wide: bool) -> np.ndarray:
    """RESCALE (per channel, input zp 0) then CLAMP, as the IR runs them after the accumulator op."""
    return requant.reference(acc, block, wide)


def _block(rng, cout: int, kind: str, wide: bool, log2_acc: int) -> np.ndarray:
    """A requant block ``{zp, lo, hi, m0, s0, ...}``.  ``log2_acc``: about the accumulators' size, so
    the random shifts put outputs in range, at the ends and beyond (saturation)."""
    m_end = 2**15 if wide else 2**31
    qlo, qhi = (-32768, 32767) if wide else (-128, 127)
    zp = 0 if wide else int(rng.integers(-128, 128))
    m = rng.integers(m_end // 2, m_end, cout)
    s = rng.integers(log2_acc + (15 if wide else 31) - (16 if wide else 8) - 2,
                     log2_acc + (15 if wide else 31) - (16 if wide else 8) + 3, cout)
    lo, hi = qlo, qhi
    if kind == "edges":  # multiplier 0 / 1 / largest, shift 2 / 62, zero point at an end
        ends = [(0, 31), (1, 2), (m_end - 1, 2), (m_end - 1, 62), (m_end // 2, 62), (m_end - 1, (15 if wide else 31) + log2_acc)]
        for o, (mv, sv) in zip(range(cout), ends):
            m[o], s[o] = mv, sv
        zp = 0 if wide else int(rng.choice([-128, 127]))
    elif kind == "ties":  # m = 2^k, s = k + 1 .. k + 4: v = acc / 2 .. acc / 16, one in 2 .. 16 an exact tie
        k = 14 if wide else 30   # (int8: shifts 31, 32 on the 64-bit path, 33, 34 on the 32-bit one)
        m[:] = 1 << k
        s[:] = [k + 1 + (o % 4) for o in range(cout)]
    elif kind == "clamp":  # a fused activation's CLAMP inside the output range (ReLU at the zero point)
        lo, hi = (0, qhi) if wide else (zp, int(min(qhi, zp + 50)))
    return requant.pack(zp, lo, hi, m, s)


KINDS = ["random", "edges", "ties", "clamp"]

# (N, H, W, Cin, Cout, KH, KW, pad, stride, dilation, input_zp)
CONV_CASES = {
    "3x3_pad1": (1, 6, 6, 4, 6, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -128),
    "1x1_zp_max": (1, 4, 5, 17, 7, 1, 1, (0, 0, 0, 0), (1, 1), (1, 1), 127),
    "stride_dilation": (2, 9, 8, 3, 9, 2, 3, (1, 0, 2, 1), (2, 1), (2, 2), 5),
}


def _conv_inputs(rng, case, wide):
    n, h, w, cin, cout, kh, kw, pad, stride, dil, izp = case
    if wide:
        x = rng.integers(-32768, 32767, (n, h, w, cin), endpoint=True, dtype=np.int16)
        b = rng.integers(-(2**36), 2**36, cout, dtype=np.int64)
        izp = 0
    else:
        x = rng.integers(-128, 127, (n, h, w, cin), endpoint=True, dtype=np.int8)
        b = rng.integers(-(2**16), 2**16, cout, dtype=np.int32)
    wt = rng.integers(-127, 127, (cout, kh, kw, cin), endpoint=True, dtype=np.int8)
    a = {"pad": list(pad), "stride": list(stride), "dilation": list(dil), "input_zp": izp, "weight_zp": 0}
    return x, wt, b, a


@pytest.mark.host
@pytest.mark.parametrize("wide", [False, True], ids=["s8", "s16"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", CONV_CASES)
def test_conv2d_requant_equals_sequence(kernel_lib, rng, name, kind, wide):
    x, w, b, a = _conv_inputs(rng, CONV_CASES[name], wide)
    acc = conv2d.run([x, w, b], a)
    block = _block(rng, w.shape[0], kind, wide, int(np.log2(np.abs(acc).max() + 1)))
    want = _sequence(acc, block, wide)
    got = kernel_lib.conv2d(x, w, b, pad=a["pad"], stride=a["stride"], dilation=a["dilation"],
                            input_zp=a["input_zp"], weight_zp=0, requant=block)
    assert got.dtype == want.dtype == (np.int16 if wide else np.int8)
    np.testing.assert_array_equal(got, want)
    if kind == "random":  # something saturates, something does not
        ends = requant.unpack(block)[1:3]
        assert (np.isin(want, ends)).any() and (~np.isin(want, ends)).any()


# (N, H, W, C, M, KH, KW, pad, stride, dilation, input_zp, weight_zp): blocks of 8 (Helium) and 32
# channels (portable) with tails, M > 1, pixels with no real tap (all padding), weight zero point
DW_CASES = {
    "3x3_c40": (1, 6, 5, 40, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -128, 0),
    "m3_c5_stride": (1, 7, 7, 5, 3, 3, 3, (1, 1, 1, 1), (2, 2), (1, 1), 127, 0),
    "all_padding_pixels": (1, 2, 2, 11, 1, 1, 1, (2, 2, 2, 2), (1, 1), (1, 1), 9, 0),
    "weight_zp_dilated": (2, 8, 6, 9, 2, 2, 3, (1, 0, 2, 1), (1, 2), (2, 2), -3, 5),
}


@pytest.mark.host
@pytest.mark.parametrize("wide", [False, True], ids=["s8", "s16"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", DW_CASES)
def test_depthwise_conv2d_requant_equals_sequence(kernel_lib, rng, name, kind, wide):
    n, h, w, c, m, kh, kw, pad, stride, dil, izp, wzp = DW_CASES[name]
    if wide:
        x = rng.integers(-32768, 32767, (n, h, w, c), endpoint=True, dtype=np.int16)
        b = rng.integers(-(2**36), 2**36, c * m, dtype=np.int64)
        izp = 0
    else:
        x = rng.integers(-128, 127, (n, h, w, c), endpoint=True, dtype=np.int8)
        b = rng.integers(-(2**14), 2**14, c * m, dtype=np.int32)
    wt = rng.integers(-127, 127, (kh, kw, c, m), endpoint=True, dtype=np.int8)
    a = {"pad": list(pad), "stride": list(stride), "dilation": list(dil), "input_zp": izp, "weight_zp": wzp}
    acc = depthwise_conv2d.run([x, wt, b], a)
    block = _block(rng, c * m, kind, wide, int(np.log2(np.abs(acc).max() + 1)))
    got = kernel_lib.depthwise_conv2d(x, wt, b, pad=a["pad"], stride=a["stride"], dilation=a["dilation"],
                                      input_zp=izp, weight_zp=wzp, requant=block)
    np.testing.assert_array_equal(got, _sequence(acc, block, wide))


# (N, Cin, Cout, input_zp, weight_zp)
FC_CASES = [(1, 1, 1, 0, 0), (1, 64, 10, -128, 0), (3, 33, 7, 127, 0), (2, 300, 6, -5, 0), (2, 9, 5, 12, -7)]


@pytest.mark.host
@pytest.mark.parametrize("wide", [False, True], ids=["s8", "s16"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", FC_CASES, ids=str)
def test_fully_connected_requant_equals_sequence(kernel_lib, rng, case, kind, wide):
    n, cin, cout, izp, wzp = case
    if wide:
        x = rng.integers(-32768, 32767, (n, cin), endpoint=True, dtype=np.int16)
        b = rng.integers(-(2**36), 2**36, cout, dtype=np.int64)
        izp = 0
    else:
        x = rng.integers(-128, 127, (n, cin), endpoint=True, dtype=np.int8)
        b = rng.integers(-(2**16), 2**16, cout, dtype=np.int32)
    w = rng.integers(-128, 127, (cout, cin), endpoint=True, dtype=np.int8)
    a = {"input_zp": izp, "weight_zp": wzp}
    acc = fully_connected.run([x, w, b], a)
    block = _block(rng, cout, kind, wide, int(np.log2(np.abs(acc).max() + 1)))
    got = kernel_lib.fully_connected(x, w, b, **a, requant=block)
    np.testing.assert_array_equal(got, _sequence(acc, block, wide))


@pytest.mark.host
@pytest.mark.parametrize("wide", [False, True], ids=["s8", "s16"])
def test_int32_and_int48_accumulator_ends(kernel_lib, wide):
    """Accumulators at the ends of int32 (int48): the largest products of apply_scale stay exact."""
    if wide:
        x = np.full((2, 2), 32767, np.int16)
        x[1] = -32768
        b = np.array([2**47 - 1 - 2 * 32767 * 127, -(2**47) + 2 * 32767 * 127], np.int64)
    else:
        x = np.full((2, 2), 127, np.int8)
        x[1] = -128
        b = np.array([2**31 - 1 - 2 * 127 * 127, -(2**31) + 2 * 127 * 127], np.int32)
    w = np.full((2, 2), 127, np.int8)
    w[1] = -127
    acc = fully_connected.run([x, w, b], {"input_zp": 0, "weight_zp": 0})
    assert acc.max() == (2**47 - 1 if wide else 2**31 - 1) and acc.min() == -(2**47 if wide else 2**31)
    m_end = 2**15 if wide else 2**31
    for m, s in ((m_end - 1, 62), (m_end - 1, 40), (1, 2), (m_end // 2, 47 if wide else 31)):
        block = requant.pack(0, *((-32768, 32767) if wide else (-128, 127)), [m, m], [s, s])
        got = kernel_lib.fully_connected(x, w, b, input_zp=0, weight_zp=0, requant=block)
        np.testing.assert_array_equal(got, _sequence(acc, block, wide))


@pytest.mark.host
@pytest.mark.parametrize("wide", [False, True], ids=["s8", "s16"])
@pytest.mark.parametrize("bad", ["zp", "lo", "hi", "lo_gt_hi", "m_neg", "m_big", "s_low", "s_high"])
def test_bad_requant_blocks_are_refused(kernel_lib, wide, bad):
    from tabula.harness import host as kl

    qlo, qhi = (-32768, 32767) if wide else (-128, 127)
    f = {"output_zp": 0, "out_min": qlo, "out_max": qhi, "multiplier": [1 << 14, 1 << 14], "shift": [20, 20]}
    change = {"zp": {"output_zp": 1 if wide else 128}, "lo": {"out_min": qlo - 1}, "hi": {"out_max": qhi + 1},
              "lo_gt_hi": {"out_min": qhi, "out_max": qlo}, "m_neg": {"multiplier": [1 << 14, -1]},
              "m_big": {"multiplier": [1 << 14, 2**15 if wide else 2**31 - 1]}, "s_low": {"shift": [20, 1]},
              "s_high": {"shift": [63, 20]}}[bad]
    if bad == "m_big" and not wide:
        pytest.skip("every int32 multiplier below 2^31 is valid for apply_scale_32")
    block = requant.pack(**{**f, **change})
    x = np.zeros((1, 4), np.int16 if wide else np.int8)
    w = np.zeros((2, 4), np.int8)
    out = np.zeros(8, np.int64)
    fn = kernel_lib.lib.tabula_fully_connected_s16 if wide else kernel_lib.lib.tabula_fully_connected_s8
    zp = () if wide else (0,)
    args = (1, 4, 2, x.ctypes.data_as(kl._i16p if wide else kl._i8p), *zp, w.ctypes.data_as(kl._i8p), 0, None)
    ok = requant.pack(**f)
    assert fn(*args, ok.ctypes.data_as(kl._rqp), out.ctypes.data_as(ctypes.c_void_p)) == kl.TABULA_OK
    assert fn(*args, block.ctypes.data_as(kl._rqp), out.ctypes.data_as(ctypes.c_void_p)) == kl.TABULA_ERR_ARG
    win = kl.KernelLib.window((1, 1, 1, 4), (1, 1), (1, 1), (1, 1), (1, 1), (0, 0, 0, 0))
    cfn = kernel_lib.lib.tabula_conv2d_s16 if wide else kernel_lib.lib.tabula_conv2d_s8
    cargs = (ctypes.byref(win), 2, x.ctypes.data_as(kl._i16p if wide else kl._i8p), *zp, w.ctypes.data_as(kl._i8p), 0, None)
    assert cfn(*cargs, ok.ctypes.data_as(kl._rqp), out.ctypes.data_as(ctypes.c_void_p)) == kl.TABULA_OK
    assert cfn(*cargs, block.ctypes.data_as(kl._rqp), out.ctypes.data_as(ctypes.c_void_p)) == kl.TABULA_ERR_ARG


# --- codegen: fuse_requant ---------------------------------------------------------------------

def _graph(clamp_bounds=None, per_tensor=False, extra_reader=False, acc_output=False) -> Graph:
    g = Graph()
    g.add_tensor(Tensor("x", (1, 8), "int8", zero_point=-128))
    g.add_tensor(Tensor("w", (3, 8), "int8"), np.ones((3, 8), np.int8))
    g.add_tensor(Tensor("b", (3,), "int32"), np.zeros(3, np.int32))
    g.add_tensor(Tensor("acc", (1, 3), "int32"))
    g.add_tensor(Tensor("y", (1, 3), "int8"))
    g.add_op(Op("FULLY_CONNECTED", ["x", "w", "b"], ["acc"], {"input_zp": -128, "weight_zp": 0}))
    m, s = ([1 << 30], [35]) if per_tensor else ([1 << 30, 3 << 29, 1 << 30], [35, 36, 37])
    g.add_op(Op("RESCALE", ["acc"], ["y"], {"input_zp": 0, "output_zp": -7, "multiplier": m, "shift": s,
                                            "scale32": True, "output_dtype": "int8"}))
    out = "y"
    if clamp_bounds is not None:
        g.add_tensor(Tensor("z", (1, 3), "int8"))
        g.add_op(Op("CLAMP", ["y"], ["z"], {"min": clamp_bounds[0], "max": clamp_bounds[1]}))
        out = "z"
    g.inputs, g.outputs = ["x"], [out]
    if extra_reader:
        g.add_tensor(Tensor("acc2", (1, 3), "int32"))
        g.add_op(Op("ADD", ["acc", "acc"], ["acc2"], {}))
        g.outputs.append("acc2")
    if acc_output:
        g.outputs.append("acc")
    return g


def test_fuse_requant_builds_the_block_of_the_sequence():
    f = fuse_requant(_graph(clamp_bounds=(-7, 100)))
    assert [o.op for o in f.ops] == ["FULLY_CONNECTED"] and f.ops[0].outputs == ["z"]
    assert "acc" not in f.tensors and "y" not in f.tensors
    block = f.constants[f.ops[0].inputs[3]]
    assert block.dtype == np.int32
    r = requant.unpack(block)
    assert (r.output_zp, r.out_min, r.out_max) == (-7, -7, 100)
    assert list(r.multiplier) == [1 << 30, 3 << 29, 1 << 30] and list(r.shift) == [35, 36, 37]
    assert list(block) == list(requant.pack(-7, -7, 100, [1 << 30, 3 << 29, 1 << 30], [35, 36, 37]))
    # a per-tensor RESCALE's multiplier is repeated per channel; no CLAMP: the dtype's range
    block = fuse_requant(_graph(per_tensor=True)).constants["y__requant"]
    assert list(block) == list(requant.pack(-7, -128, 127, [1 << 30] * 3, [35] * 3))


@pytest.mark.parametrize("why", ["extra_reader", "acc_output"])
def test_fuse_requant_leaves_a_shared_accumulator(why):
    g = _graph(**{why: True})
    f = fuse_requant(g)
    assert [o.op for o in f.ops] == [o.op for o in g.ops] and "acc" in f.tensors


def test_fused_block_on_the_reference_equals_the_ir(rng):
    """The block fuse_requant builds, applied to the accumulator as the kernels do, equals the IR's ops."""
    g = _graph(clamp_bounds=(-7, 60))
    x = rng.integers(-128, 127, (1, 8), endpoint=True, dtype=np.int8)
    w = rng.integers(-127, 127, (3, 8), endpoint=True, dtype=np.int8)
    g.constants["w"] = w
    acc = fully_connected.run([x, w, g.constants["b"]], g.ops[0].attrs)
    y = rescale.run([acc], g.ops[1].attrs)
    want = clamp.run([y], g.ops[2].attrs)
    block = fuse_requant(g).constants["z__requant"]
    np.testing.assert_array_equal(_sequence(acc, block, False), want)
