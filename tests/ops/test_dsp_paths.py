"""The DSP-extension paths (Cortex-M4 / M7 / M33: ``firmware_templates/kernels/tabula_dsp.h`` for CONV2D (both
``tabula_conv2d_s8`` and ``tabula_conv2d_s8_folded``, whose bias holds -input_zp * sum(w) and whose padding
reads pad_value) and FULLY_CONNECTED, the typed body ``depthwise_conv2d/tabula_depthwise_conv2d_impl.h`` for DEPTHWISE_CONV2D) equal
the Python reference bit for bit where their blocking has edges, with and without the fused ``requant``
epilogue, on QEMU's Cortex-M4 (``mps2_an386``) and Cortex-M33 (``mps2_an505``) through
tests/device_kernels.py (one batch, one QEMU run per kernel and board):

* CONV2D (2 output channels x 2 pixels): odd channel counts (a channel is its own partner), an odd pixel
  count and a pixel pair that spans two batch items, Cin % 4 == 0 (each tap widened from the input,
  padded taps zero) and Cin % 4 != 0 (staged, the K % 4 values at the end scalar), K < 4, K = 1024 (the
  largest patch on the path) and 1026 (the portable path), stride, dilation, asymmetric padding, a
  weight zero point (portable).
* DEPTHWISE_CONV2D (4 channels per step over the listed real taps): channel tails 1-7, clipped windows
  of every shape, pixels whose window lies in the padding, 256 taps (the limit) and 272 (portable),
  multiplier 2 and a weight zero point (portable).
* FULLY_CONNECTED (4 rows over the input widened once): in_c < 4 (no group), tails of 1-3 inputs and
  rows, in_c 2048 (the largest widened input) and 2049 (widened as read), a weight zero point.

int16 activations (a16w8: CONV2D and FULLY_CONNECTED with SMLALD into 64 bits, DEPTHWISE_CONV2D with exact
32-bit tap sums added to the 64-bit bias): K % 4 and channel tails, odd output channels, the size limits
(256 taps of the largest products), a multiplier 2 and a weight zero point (portable), on the M4.

And where a sum leaves int32 (outside the IR contract, which proves it fits) every DSP path wraps
modulo 2^32 exactly as the portable path does: the same call on ``mps2_an386`` with
``TABULA_PORTABLE_ONLY=1`` gives the same bits.
"""
from __future__ import annotations

import numpy as np
import pytest

from device_kernels import DeviceKernelLib
from tabula import requant
from tabula.reference.ops import clamp, conv2d, depthwise_conv2d, fully_connected, rescale

pytestmark = [pytest.mark.arm, pytest.mark.qemu]

BOARDS = {"m4": ("mps2_an386", False), "m33": ("mps2_an505", False), "m4-portable": ("mps2_an386", True)}


@pytest.fixture(scope="module")
def dsp_lib(tmp_path_factory):
    libs = {}
    root = tmp_path_factory.mktemp("dsp_kernels")

    def get(target: str) -> DeviceKernelLib:
        if target not in libs:
            board, portable = BOARDS[target]
            libs[target] = DeviceKernelLib(board, portable=portable, work_dir=root)
        return libs[target]

    return get


def _requant_block(rng, acc: np.ndarray) -> np.ndarray:
    """``{output_zp, out_min, out_max, m0, s0, ...}`` putting the outputs around the int8 range (some
    saturate), with a multiplier 2^31 - 1 and shifts 2, 32 and 62 among them."""
    cout = acc.shape[-1]
    log2 = int(np.log2(np.abs(acc.astype(np.int64)).max() + 1))
    m = rng.integers(2**30, 2**31, cout)
    s = rng.integers(log2 + 22, log2 + 26, cout)
    for o, (mv, sv) in zip(range(cout), [(2**31 - 1, 62), (2**30, 2), (2**31 - 1, 32)]):
        m[o], s[o] = mv, sv
    zp = int(rng.integers(-128, 128))
    return requant.pack(zp, -128, 127, m, s)


def _requantized(acc: np.ndarray, block: np.ndarray) -> np.ndarray:
    return requant.reference(acc, block)


def _int8(rng, shape, edges: bool) -> np.ndarray:
    if edges:
        return rng.choice(np.array([-128, 127], np.int8), shape)
    return rng.integers(-128, 127, shape, endpoint=True, dtype=np.int8)


# (N, H, W, Cin, Cout, KH, KW, pad [t,b,l,r], stride, dilation, input_zp, weight_zp, kind)
CONV_CASES = [
    (1, 3, 3, 4, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -128, 0, "edges"),      # Cout 1, 9 pixels, Cin % 4 == 0
    (1, 1, 1, 3, 3, 1, 1, (0, 0, 0, 0), (1, 1), (1, 1), 127, 0, "edges"),       # K = 3: no group of 4
    (2, 3, 3, 5, 3, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 7, 0, "random"),        # a pixel pair spans the batch
    (2, 5, 4, 6, 5, 2, 2, (1, 0, 0, 1), (1, 2), (2, 1), -9, 0, "random"),       # staged, asymmetric pad
    (1, 6, 5, 8, 4, 3, 3, (2, 2, 2, 2), (3, 3), (1, 1), 0, 0, "random"),        # stride 3, pad 2
    (1, 7, 6, 12, 6, 3, 2, (0, 0, 0, 0), (1, 1), (3, 2), 100, 0, "random"),     # dilation, no pad
    (1, 4, 4, 113, 2, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -128, 0, "edges"),    # K = 1017 (tail 1)
    (1, 2, 3, 256, 5, 2, 2, (0, 1, 1, 0), (1, 1), (1, 1), 127, 0, "random"),    # K = 1024: the largest patch
    (1, 3, 3, 114, 3, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 3, 0, "random"),      # K = 1026: portable
    (1, 4, 4, 7, 5, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -3, -7, "random"),      # weight zp: portable
    (1, 2, 2, 9, 7, 1, 1, (2, 2, 2, 2), (1, 1), (1, 1), 9, 0, "random"),        # padding-only pixels
]

# (N, H, W, C, M, KH, KW, pad, stride, dilation, input_zp, weight_zp, kind)
DW_CASES = [
    *[(1, 4, 5, c, 1, 5, 3, (2, 2, 1, 1), (1, 1), (1, 1), 13 * c - 50, 0, "random") for c in range(1, 8)],
    (1, 5, 5, 12, 1, 3, 3, (1, 1, 1, 1), (2, 2), (2, 2), -128, 0, "edges"),
    (1, 1, 1, 9, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 127, 0, "edges"),       # 1-pixel map
    (2, 2, 2, 6, 1, 1, 1, (2, 2, 2, 2), (1, 1), (1, 1), 9, 0, "random"),        # padding-only pixels
    (1, 3, 2, 8, 1, 3, 3, (4, 0, 0, 3), (1, 1), (1, 1), -1, 0, "random"),       # windows wholly in the padding
    (1, 16, 16, 4, 1, 16, 16, (7, 8, 7, 8), (1, 1), (1, 1), 5, 0, "random"),    # 256 taps: the limit
    (1, 17, 16, 4, 1, 17, 16, (8, 8, 7, 8), (4, 4), (1, 1), 5, 0, "random"),    # 272 taps: portable
    (1, 4, 4, 5, 2, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 3, 0, "random"),        # multiplier 2: portable
    (1, 4, 4, 8, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 3, -5, "random"),       # weight zp: portable
]

# (N, Cin, Cout, input_zp, weight_zp, kind)
FC_CASES = [
    *[(1, ci, co, 50 - 20 * ci, 0, "random") for ci in (1, 2, 3) for co in (1, 4, 5)],
    *[(2, ci, co, -128 if ci % 2 else 127, 0, "edges") for ci, co in ((4, 1), (5, 7), (6, 6), (7, 9), (9, 3))],
    (1, 2048, 6, -3, 0, "random"),                                              # the largest widened input
    (1, 2049, 5, 4, 0, "random"),                                               # widened as read
    (3, 13, 9, -128, -128, "edges"),                                            # weight zp: widened as read
]


def _conv(rng, case):
    n, h, w, cin, cout, kh, kw, pad, stride, dil, izp, wzp, kind = case
    x = _int8(rng, (n, h, w, cin), kind == "edges")
    wt = rng.integers(-127, 127, (cout, kh, kw, cin), endpoint=True, dtype=np.int8)
    b = rng.integers(-(2**16), 2**16, cout, dtype=np.int32)
    a = {"pad": list(pad), "stride": list(stride), "dilation": list(dil), "input_zp": izp, "weight_zp": wzp}
    return (x, wt, b), a, lambda dev, arr, rq: dev.conv2d(*arr, **a, requant=rq), conv2d.run


def _conv_folded(rng, case):
    """tabula_conv2d_s8_folded (codegen's fold_input_zp): bias - input_zp * sum(w), pad_value = input_zp,
    which is TOSA CONV2D with that input zero point."""
    (x, wt, b), a, _, ref = _conv(rng, case)
    folded = (b - a["input_zp"] * wt.reshape(wt.shape[0], -1).astype(np.int32).sum(axis=1)).astype(np.int32)
    win = {k: a[k] for k in ("pad", "stride", "dilation")}
    return ((x, wt, b), a, lambda dev, arr, rq: dev.conv2d_folded(arr[0], arr[1], folded, **win, pad_value=a["input_zp"],
                                                                   requant=rq), ref)


def _dw(rng, case):
    n, h, w, c, m, kh, kw, pad, stride, dil, izp, wzp, kind = case
    x = _int8(rng, (n, h, w, c), kind == "edges")
    wt = rng.integers(-127, 127, (kh, kw, c, m), endpoint=True, dtype=np.int8)
    b = rng.integers(-(2**14), 2**14, c * m, dtype=np.int32)
    a = {"pad": list(pad), "stride": list(stride), "dilation": list(dil), "input_zp": izp, "weight_zp": wzp}
    return (x, wt, b), a, lambda dev, arr, rq: dev.depthwise_conv2d(*arr, **a, requant=rq), depthwise_conv2d.run


def _fc(rng, case):
    n, cin, cout, izp, wzp, kind = case
    x = _int8(rng, (n, cin), kind == "edges")
    wt = rng.integers(-127, 127, (cout, cin), endpoint=True, dtype=np.int8)
    b = rng.integers(-(2**16), 2**16, cout, dtype=np.int32)
    a = {"input_zp": izp, "weight_zp": wzp}
    return (x, wt, b), a, lambda dev, arr, rq: dev.fully_connected(*arr, **a, requant=rq), fully_connected.run


KINDS = {"conv2d": (CONV_CASES, _conv), "conv2d_folded": ([c for c in CONV_CASES if c[11] == 0], _conv_folded),
         "depthwise_conv2d": (DW_CASES, _dw), "fully_connected": (FC_CASES, _fc)}


@pytest.mark.parametrize("target", ["m4", "m33"])
@pytest.mark.parametrize("kind", KINDS)
def test_dsp_path_equals_reference(dsp_lib, rng, target, kind):
    cases, make = KINDS[kind]
    dev = dsp_lib(target)
    want, got, names = [], [], []
    with dev.batch() as runs:
        for case in cases:
            arrays, attrs, call, ref = make(rng, case)
            acc = ref(list(arrays), attrs)
            block = _requant_block(rng, acc)
            want += [acc, _requantized(acc, block)]
            got += [call(dev, arrays, None), call(dev, arrays, block)]
            names += [(case, "int32"), (case, "requant")]
    assert all(r.status == 0 for r in runs)
    for (case, what), g, w in zip(names, got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (case, what)
        bad = np.argwhere(g != w)
        assert bad.size == 0, (f"{kind} {case} {what}: {len(bad)} of {g.size} differ, first at {tuple(bad[0])}: "
                               f"device {g[tuple(bad[0])]}, reference {w[tuple(bad[0])]}")


# int16 activations x int8 weights (a16w8): (N, H, W, Cin, Cout, KH, KW, pad, stride, dilation, weight_zp)
CONV16_CASES = [
    (1, 5, 5, 8, 6, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 0),        # K % 4 == 0
    (2, 4, 3, 3, 5, 3, 2, (1, 0, 0, 1), (1, 2), (2, 1), 0),        # K = 18: a tail of 2, odd Cout
    (1, 1, 1, 3, 1, 1, 1, (0, 0, 0, 0), (1, 1), (1, 1), 0),        # K = 3: no group, Cout 1
    (1, 3, 3, 114, 2, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 0),      # K = 1026: portable
    (1, 4, 4, 5, 3, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 9),        # weight zp: portable
]
# (N, H, W, C, M, KH, KW, pad, stride, dilation, weight_zp)
DW16_CASES = [
    *[(1, 4, 5, c, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 0) for c in (1, 4, 5, 7, 8)],   # channel tails
    (2, 5, 5, 12, 1, 3, 3, (2, 1, 0, 3), (2, 2), (2, 1), 0),       # clipped windows, stride, dilation
    (1, 3, 2, 8, 1, 3, 3, (4, 0, 0, 3), (1, 1), (1, 1), 0),        # windows wholly in the padding
    (1, 16, 16, 5, 1, 16, 16, (0, 0, 0, 0), (1, 1), (1, 1), 0),    # 256 real taps of (-32768)(-128): 2^30
    (1, 4, 4, 5, 2, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 0),        # multiplier 2: portable
    (1, 4, 4, 8, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -4),       # weight zp: portable
]
# (N, Cin, Cout, weight_zp)
FC16_CASES = [(1, 1, 1, 0), (2, 7, 3, 0), (1, 64, 12, 0), (3, 13, 5, 0), (1, 2048, 3, 0), (1, 2049, 2, 0),
              (2, 9, 4, -3)]


def _block16(rng, acc: np.ndarray) -> np.ndarray:
    """A requant block for int48 accumulators: multipliers < 2^15, output zp 0, int16 outputs (some
    saturate)."""
    log2 = int(np.log2(np.abs(acc.astype(np.int64)).max() + 1))
    m = rng.integers(2**14, 2**15, acc.shape[-1])
    s = rng.integers(log2 - 2, log2 + 2, acc.shape[-1]).clip(2, 62)
    return requant.pack(0, -32768, 32767, m, s)


@pytest.mark.parametrize("target", ["m4"])
def test_dsp_path_int16_equals_reference(dsp_lib, rng, target):
    dev = dsp_lib(target)
    want, got, names = [], [], []
    with dev.batch():
        for case in CONV16_CASES:
            n, h, w, cin, cout, kh, kw, pad, stride, dil, wzp = case
            x = rng.integers(-32768, 32767, (n, h, w, cin), endpoint=True, dtype=np.int16)
            wt = rng.integers(-127, 127, (cout, kh, kw, cin), endpoint=True, dtype=np.int8)
            b = rng.integers(-(2**40), 2**40, cout, dtype=np.int64)
            a = {"pad": list(pad), "stride": list(stride), "dilation": list(dil), "input_zp": 0, "weight_zp": wzp}
            acc = conv2d.run([x, wt, b], a)
            block = _block16(rng, acc)
            want += [acc, _requantized16(acc, block)]
            got += [dev.conv2d(x, wt, b, **a, requant=r) for r in (None, block)]
            names += [("conv", case)] * 2
        for case in DW16_CASES:
            n, h, w, c, m, kh, kw, pad, stride, dil, wzp = case
            x = rng.integers(-32768, 32767, (n, h, w, c), endpoint=True, dtype=np.int16)
            wt = rng.integers(-127, 127, (kh, kw, c, m), endpoint=True, dtype=np.int8)
            if kh * kw == 256:   # every product at its largest, +2^22: an interior tap sum of 2^30
                x[:] = -32768
                wt[:] = -128
            b = rng.integers(-(2**40), 2**40, c * m, dtype=np.int64)
            a = {"pad": list(pad), "stride": list(stride), "dilation": list(dil), "input_zp": 0, "weight_zp": wzp}
            acc = depthwise_conv2d.run([x, wt, b], a)
            block = _block16(rng, acc)
            want += [acc, _requantized16(acc, block)]
            got += [dev.depthwise_conv2d(x, wt, b, **a, requant=r) for r in (None, block)]
            names += [("dw", case)] * 2
        for case in FC16_CASES:
            n, cin, cout, wzp = case
            x = rng.integers(-32768, 32767, (n, cin), endpoint=True, dtype=np.int16)
            wt = rng.integers(-127, 127, (cout, cin), endpoint=True, dtype=np.int8)
            b = rng.integers(-(2**40), 2**40, cout, dtype=np.int64)
            acc = fully_connected.run([x, wt, b], {"input_zp": 0, "weight_zp": wzp})
            block = _block16(rng, acc)
            want += [acc, _requantized16(acc, block)]
            got += [dev.fully_connected(x, wt, b, input_zp=0, weight_zp=wzp, requant=r) for r in (None, block)]
            names += [("fc", case)] * 2
    for k, (name, g, w) in enumerate(zip(names, got, want)):
        assert g.dtype == w.dtype and g.shape == w.shape, name
        np.testing.assert_array_equal(g, w, err_msg=f"{name} {'requant' if k % 2 else 'int48'}")


def _requantized16(acc: np.ndarray, block: np.ndarray) -> np.ndarray:
    return requant.reference(acc, block, wide=True)


def test_dsp_paths_wrap_like_the_portable_path(dsp_lib, rng):
    """Sums beyond int32 (bias 2^31 - 1000, then products (-128 - 127) * -127 = +32,385 at every tap of
    the even channels; random signs on the odd ones) wrap modulo 2^32 on the DSP paths exactly as on the
    portable path; the requantized outputs agree too."""
    x = np.full((1, 4, 4, 12), -128, np.int8)

    def weights(shape, axis):
        w = rng.choice(np.array([-127, 127], np.int8), shape)
        even = np.moveaxis(w, axis, 0)
        even[0::2] = -127
        return w

    w_conv, w_dw, w_fc = weights((6, 3, 3, 12), 0), weights((3, 3, 12, 1), 2), weights((6, 192), 0)
    bias = np.full(12, 2**31 - 1000, np.int32)
    rq = requant.pack(3, -128, 127, [2**30 + 12345] * 12, [40] * 12)
    outs = {}
    for target in ("m4", "m4-portable"):
        dev = dsp_lib(target)
        with dev.batch():
            conv = [dev.conv2d(x, w_conv, bias[:6], pad=[1, 1, 1, 1], stride=[1, 1], dilation=[1, 1], input_zp=127,
                               weight_zp=0, requant=r) for r in (None, requant.pack(3, -128, 127, [2**30 + 12345] * 6, [40] * 6))]
            dw = [dev.depthwise_conv2d(x, w_dw, bias, pad=[1, 1, 1, 1], stride=[1, 1], dilation=[1, 1], input_zp=127,
                                       weight_zp=0, requant=r) for r in (None, rq)]
            fc = [dev.fully_connected(x.reshape(1, 192), w_fc, bias[:6], input_zp=127, weight_zp=0, requant=r)
                  for r in (None, requant.pack(3, -128, 127, [2**30 + 12345] * 6, [40] * 6))]
        outs[target] = conv + dw + fc
    for k, (a, b) in enumerate(zip(outs["m4"], outs["m4-portable"])):
        np.testing.assert_array_equal(a, b, err_msg=f"output {k}")
    # the even channels' sums did leave int32 and wrapped to negative values (else this proves nothing)
    assert (outs["m4"][0][..., 0::2] < 0).any() and (outs["m4"][2][..., 0::2] < 0).any()
    assert (outs["m4"][4][..., 0::2] < 0).all()
