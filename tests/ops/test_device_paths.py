"""Every ISA path of the accumulator kernels, run on the emulated core, equals the Python reference bit
for bit: tabula_conv2d_s8, tabula_depthwise_conv2d_s8 and tabula_fully_connected_s8, with and without
the fused ``requant`` epilogue, on QEMU's Cortex-M55 with its Helium paths (``m55``), the same core
with ``TABULA_PORTABLE_ONLY=1`` (``m55-portable``) and a Cortex-M4 (``m4``, mps2_an386), through
tests/device_kernels.py (one program and one QEMU run per target and kernel: every case of a test is
one batch).  Shapes: random, and the edges where vector and blocked paths have tails -- channel tails
1-15 (in and out), 1-pixel maps, 1 input channel, patches over 2 KiB and 4 KiB, zero points at the
int8 ends, asymmetric padding, stride and dilation, pixels with padding only.

Expected values come from python/tabula/reference/ops/{conv2d,depthwise_conv2d,fully_connected}.py,
then (with ``requant``) RESCALE (``reference/ops/rescale.py``, per channel, input zp 0) and CLAMP, the
IR sequence the epilogue fuses."""
from __future__ import annotations

import numpy as np
import pytest

from device_kernels import TARGETS
from tabula import qmath, requant
from tabula.reference.ops import clamp, conv2d, depthwise_conv2d, fully_connected, rescale

pytestmark = [pytest.mark.arm, pytest.mark.qemu]


def _requant_block(rng, cout: int, acc: np.ndarray, edges: bool = False) -> np.ndarray:
    """``{output_zp, out_min, out_max, m0, s0, ...}``: multipliers in [2^30, 2^31) and shifts that put
    the outputs around the int8 range (some saturate); ``edges``: multiplier 0, 1 and 2^31-1, shift 2
    and 62, the zero point at an end, a CLAMP inside the range."""
    log2 = int(np.log2(np.abs(acc).max() + 1))
    m = rng.integers(2**30, 2**31, cout)
    s = rng.integers(log2 + 31 - 8 - 1, log2 + 31 - 8 + 3, cout)
    zp, lo, hi = int(rng.integers(-128, 128)), -128, 127
    if edges:
        for o, (mv, sv) in zip(range(cout), [(0, 31), (1, 2), (2**31 - 1, 2), (2**31 - 1, 62), (2**30, 62)]):
            m[o], s[o] = mv, sv
        zp = int(rng.choice([-128, 127]))
        lo, hi = (zp, 127) if zp < 0 else (-100, zp)
    return requant.pack(zp, lo, hi, m, s)


def _requantized(acc: np.ndarray, block: np.ndarray) -> np.ndarray:
    return requant.reference(acc, block)


def _int8(rng, shape) -> np.ndarray:
    return rng.integers(-128, 127, shape, endpoint=True, dtype=np.int8)


def _run_cases(dev, rng, cases, make, call, ref):
    """Each case with and without requant, in one batch on ``dev``; compare every output with the
    reference.  ``make(rng, case) -> (arrays, attrs)``, ``call(dev, arrays, attrs, requant) -> out``,
    ``ref(arrays, attrs) -> int32 accumulators``."""
    want, got = [], []
    with dev.batch() as runs:
        for case in cases:
            arrays, attrs = make(rng, case)
            acc = ref(arrays, attrs)
            block = _requant_block(rng, acc.shape[-1], acc, edges=case[-1] == "edges")
            want += [acc, _requantized(acc, block)]
            got += [call(dev, arrays, attrs, None), call(dev, arrays, attrs, block)]
    assert len(runs) == 2 * len(cases) and all(r.status == 0 for r in runs)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype and g.shape == w.shape, (cases[k // 2], g.dtype, g.shape, w.dtype, w.shape)
        if not np.array_equal(g, w):
            bad = np.argwhere(g != w)
            pytest.fail(f"case {cases[k // 2]} {'requant' if k % 2 else 'int32'}: {len(bad)} of {g.size} differ, "
                        f"first at {tuple(bad[0])}: device {g[tuple(bad[0])]}, reference {w[tuple(bad[0])]}")


# (N, H, W, Cin, Cout, KH, KW, pad [t,b,l,r], stride, dilation, input_zp, weight_zp, kind)
CONV_CASES = [
    (1, 8, 8, 16, 32, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -3, 0, "random"),
    (1, 6, 6, 32, 19, 1, 1, (0, 0, 0, 0), (1, 1), (1, 1), 5, 0, "random"),
    *[(1, 3, 3, (co * 7) % 17 + 1, co, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 11, 0, "random") for co in range(1, 16)],
    (1, 1, 1, 8, 5, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -128, 0, "edges"),        # 1-pixel map
    (1, 7, 7, 1, 8, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 127, 0, "random"),         # 1 input channel
    (1, 3, 3, 300, 4, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -128, 0, "random"),      # patch 2,700 B > 2 KiB
    (1, 3, 2, 520, 3, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 127, 0, "edges"),        # patch 4,680 B > 4 KiB
    (2, 9, 8, 3, 9, 2, 3, (1, 0, 2, 1), (2, 1), (2, 2), 5, -7, "random"),          # asym pad, stride, dilation
    (1, 2, 2, 11, 6, 1, 1, (2, 2, 2, 2), (1, 1), (1, 1), 9, 0, "random"),          # padding-only pixels
]


def _conv_make(rng, case):
    n, h, w, cin, cout, kh, kw, pad, stride, dil, izp, wzp, _ = case
    x, wt = _int8(rng, (n, h, w, cin)), rng.integers(-127, 127, (cout, kh, kw, cin), endpoint=True, dtype=np.int8)
    b = rng.integers(-(2**16), 2**16, cout, dtype=np.int32)
    return (x, wt, b), {"pad": list(pad), "stride": list(stride), "dilation": list(dil), "input_zp": izp, "weight_zp": wzp}


def _conv_call(dev, arrays, a, requant):
    return dev.conv2d(*arrays, pad=a["pad"], stride=a["stride"], dilation=a["dilation"], input_zp=a["input_zp"],
                      weight_zp=a["weight_zp"], requant=requant)


@pytest.mark.parametrize("target", TARGETS)
def test_conv2d_s8_on_device(device_lib, rng, target):
    _run_cases(device_lib(target), rng, CONV_CASES, _conv_make, _conv_call, lambda arr, a: conv2d.run(list(arr), a))


# (N, H, W, C, M, KH, KW, pad, stride, dilation, input_zp, weight_zp, kind)
DW_CASES = [
    (1, 8, 8, 64, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -3, 0, "random"),
    *[(1, 4, 3, c, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 7, 0, "random") for c in range(1, 16)],
    (1, 5, 5, 40, 1, 3, 3, (1, 1, 1, 1), (2, 2), (1, 1), -128, 0, "edges"),
    (1, 7, 7, 5, 3, 3, 3, (1, 1, 1, 1), (2, 2), (1, 1), 127, 0, "random"),          # multiplier 3
    (1, 1, 1, 19, 2, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -128, 0, "edges"),         # 1-pixel map
    (1, 6, 6, 1, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 127, 0, "random"),          # 1 channel
    (1, 3, 3, 2000, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 3, 0, "random"),         # 9 x 2000 B taps
    (2, 8, 6, 9, 2, 2, 3, (1, 0, 2, 1), (1, 2), (2, 2), -3, 5, "random"),           # weight zp, dilation
    (1, 2, 2, 11, 1, 1, 1, (2, 2, 2, 2), (1, 1), (1, 1), 9, 0, "random"),           # padding-only pixels
]


def _dw_make(rng, case):
    n, h, w, c, m, kh, kw, pad, stride, dil, izp, wzp, _ = case
    x, wt = _int8(rng, (n, h, w, c)), rng.integers(-127, 127, (kh, kw, c, m), endpoint=True, dtype=np.int8)
    b = rng.integers(-(2**14), 2**14, c * m, dtype=np.int32)
    return (x, wt, b), {"pad": list(pad), "stride": list(stride), "dilation": list(dil), "input_zp": izp, "weight_zp": wzp}


def _dw_call(dev, arrays, a, requant):
    return dev.depthwise_conv2d(*arrays, pad=a["pad"], stride=a["stride"], dilation=a["dilation"],
                                input_zp=a["input_zp"], weight_zp=a["weight_zp"], requant=requant)


@pytest.mark.parametrize("target", TARGETS)
def test_depthwise_conv2d_s8_on_device(device_lib, rng, target):
    _run_cases(device_lib(target), rng, DW_CASES, _dw_make, _dw_call,
               lambda arr, a: depthwise_conv2d.run(list(arr), a))


# (N, Cin, Cout, input_zp, weight_zp, kind)
FC_CASES = [
    (1, 256, 128, -3, 0, "random"),
    *[(1, ci, (ci * 5) % 15 + 1, 9, 0, "random") for ci in range(1, 16)],
    *[(2, 16 * k + k, 16 + k, -128 if k % 2 else 127, 0, "edges") for k in range(1, 4)],
    (3, 4200, 3, -128, 0, "random"),                                                 # a row of 4,200 B
    (2, 9, 5, 12, -7, "random"),                                                     # weight zero point
]


def _fc_make(rng, case):
    n, cin, cout, izp, wzp, _ = case
    x, wt = _int8(rng, (n, cin)), rng.integers(-127, 127, (cout, cin), endpoint=True, dtype=np.int8)
    b = rng.integers(-(2**16), 2**16, cout, dtype=np.int32)
    return (x, wt, b), {"input_zp": izp, "weight_zp": wzp}


def _fc_call(dev, arrays, a, requant):
    return dev.fully_connected(*arrays, input_zp=a["input_zp"], weight_zp=a["weight_zp"], requant=requant)


@pytest.mark.parametrize("target", TARGETS)
def test_fully_connected_s8_on_device(device_lib, rng, target):
    _run_cases(device_lib(target), rng, FC_CASES, _fc_make, _fc_call, lambda arr, a: fully_connected.run(list(arr), a))


@pytest.mark.parametrize("target", ["m55"])
def test_device_harness_reports_status_and_instructions(device_lib, target):
    """A refused argument comes back as the host library's KernelError; a measured call has an
    instruction count that grows with the work."""
    from kernel_lib import TABULA_ERR_ARG, KernelError

    dev = device_lib(target)
    x = np.ones((1, 64), np.int8)
    with pytest.raises(KernelError) as e:
        dev.fully_connected(x, np.ones((4, 64), np.int8), None, input_zp=200, weight_zp=0)
    assert e.value.status == TABULA_ERR_ARG
    codes = np.arange(-32768, 32768, 97, dtype=np.int16)
    t16 = np.round(np.tanh(np.linspace(-4, 4, 513)) * 32767).astype(np.int16)
    with dev.batch() as runs:
        small = dev.fully_connected(x, np.ones((4, 64), np.int8), None, input_zp=0, weight_zp=0)
        big = dev.fully_connected(x, np.ones((64, 64), np.int8), None, input_zp=0, weight_zp=0)
        y16 = dev.table16(codes, t16)        # a pointer-table parameter (const int16_t *const *hi)
    assert small.tolist() == [[64] * 4] and big.tolist() == [[64] * 64]
    assert 0 < runs[0].instructions < runs[1].instructions
    np.testing.assert_array_equal(y16, qmath.table16_apply(t16, codes))


# --- the input zero point folded into the bias (codegen's fold_input_zp) -------------------------------
# tabula_conv2d_s8_folded and tabula_fully_connected_s8 with the folded bias and input_zp 0, as codegen
# calls them: the Helium GEMM (1x1 rows, FC batch; the assembly loop for rows of a multiple of 16 bytes,
# the C loop otherwise), the patch and tap-tiling paths, channel tails of 1-3 after blocks of 4; the
# requant blocks' "ties" kind (every shift >= 33: the vector epilogue, VMULH + VRSHL) puts exact ties,
# multiplier 0 / 1 / 2^31 - 1 and shift 62 through it; "edges" (shifts < 33) the scalar one.
FOLDED_CONV_CASES = [c[:-1] + ("ties",) for c in CONV_CASES if c[11] == 0] + [
    *[(1, 3, 2, ci, 16 + ci % 4, 1, 1, (0, 0, 0, 0), (1, 1), (1, 1), -128, 0, "ties") for ci in (1, 15, 16, 17, 48, 80)],
    (1, 4, 4, 64, 67, 1, 1, (0, 0, 0, 0), (1, 1), (1, 1), 3, 0, "random"),          # 2 tiles of 64 channels
    (1, 5, 5, 7, 4, 1, 1, (1, 0, 0, 1), (2, 1), (1, 1), 127, 0, "edges"),           # 1x1 with padding, stride
]
FOLDED_FC_CASES = [c[:-1] + ("ties",) for c in FC_CASES if c[4] == 0] + [(4, 64, 130, -7, 0, "edges")]


def _ties_block(rng, cout: int, acc: np.ndarray) -> np.ndarray:
    """Shifts 33..62 only (the vector epilogue): m = 2^30 with s = 30 + k puts the outputs around the
    int8 range and makes one accumulator in 2^k an exact tie (k from the accumulators' size, >= 3);
    every 5th channel an extreme (m 0, 1, 2^31 - 1 with s 33, 2^31 - 1 with s 62)."""
    k = max(3, int(np.log2(np.abs(acc).max() + 1)) - 7)
    m, s = np.full(cout, 2**30), 30 + k + np.arange(cout) % 2
    for o in range(0, cout, 5):
        m[o], s[o] = [(0, 33), (1, 33), (2**31 - 1, 33), (2**31 - 1, 62)][(o // 5) % 4]
    zp = int(rng.choice([-128, 127, 5]))
    return requant.pack(zp, -128, 127, m, s)


def _run_folded(dev, rng, cases, make, call, ref):
    from tabula.codegen.fusion import folded_bias

    want, got = [], []
    with dev.batch() as runs:
        for case in cases:
            (x, wt, b), a = make(rng, case[:-1] + ("random",))
            acc = ref((x, wt, b), a)
            block = _ties_block(rng, acc.shape[-1], acc) if case[-1] == "ties" else _requant_block(
                rng, acc.shape[-1], acc, edges=case[-1] == "edges")
            bf = folded_bias(wt, b, a["input_zp"])
            want += [acc, _requantized(acc, block)]
            got += [call(dev, x, wt, bf, a, None), call(dev, x, wt, bf, a, block)]
    assert all(r.status == 0 for r in runs)
    ties = 0
    for k, (g, w) in enumerate(zip(got, want)):
        bad = np.argwhere(g != w)
        if k % 2 and cases[k // 2][-1] == "ties":
            ties += int(((w > -128) & (w < 127)).sum())
        assert g.dtype == w.dtype and not len(bad), (cases[k // 2], k % 2, len(bad), bad[:1].tolist())
    assert ties > 100  # the vector epilogue's outputs are not all saturated


@pytest.mark.parametrize("target", TARGETS)
def test_conv2d_s8_folded_on_device(device_lib, rng, target):
    def call(dev, x, wt, bf, a, requant):
        return dev.conv2d_folded(x, wt, bf, pad=a["pad"], stride=a["stride"], dilation=a["dilation"],
                                 pad_value=a["input_zp"], requant=requant)

    _run_folded(device_lib(target), rng, FOLDED_CONV_CASES, _conv_make, call, lambda arr, a: conv2d.run(list(arr), a))


@pytest.mark.parametrize("target", TARGETS)
def test_fully_connected_s8_folded_on_device(device_lib, rng, target):
    def call(dev, x, wt, bf, a, requant):
        return dev.fully_connected(x, wt, bf, input_zp=0, weight_zp=0, requant=requant)

    _run_folded(device_lib(target), rng, FOLDED_FC_CASES, _fc_make, call,
                lambda arr, a: fully_connected.run(list(arr), a))


@pytest.mark.parametrize("target", ["m55"])
def test_vector_requant_ties_and_extremes_on_device(device_lib, target):
    """The vector epilogue on crafted accumulators (x = 0, so acc = bias): exact ties of both signs at
    shifts 33..36 and 62 (half toward +infinity: -2.5 -> -2), int32's ends with multiplier 2^31 - 1,
    multiplier 0 and 1 -- equal to TOSA apply_scale_32 (reference RESCALE) lane by lane."""
    acc = []
    for k in (3, 4, 5, 6):
        acc += [(2 * j + 1) << (k - 1) for j in range(-6, 6)]        # ties: (2j + 1) / 2 after the shift
    acc += [2**31 - 1, -(2**31), 2**31 - 2, -(2**31) + 1, 0, 1, -1, (1 << 30) + 12345, -(3 << 29)]
    acc = np.array(acc + [0] * (-len(acc) % 4 + 3), np.int64)         # a tail of 3 channels too
    cout = acc.size
    m = np.full(cout, 2**30)
    s = np.concatenate([np.repeat([33, 34, 35, 36], 12), [33] * (cout - 48)])
    m[48:52], s[48:52] = 2**31 - 1, [33, 33, 62, 62]
    m[52], m[53] = 0, 1
    block = requant.pack(-5, -128, 127, m, s)
    x, w = np.zeros((1, 32), np.int8), np.ones((cout, 32), np.int8)
    got = device_lib(target).fully_connected(x, w, acc.astype(np.int32), input_zp=0, weight_zp=0, requant=block)
    np.testing.assert_array_equal(got, _requantized(acc.astype(np.int32)[None, :], block))
