"""FULLY_CONNECTED: C tabula_fully_connected_s8 / _s16 == reference (tolerance 0), reference == numpy
float64 matmul, zero points at the int8 ends, int32 / int48 extremes, errors; and every ISA path on every
target, the vector requantization's ties and extremes (the end of this file)."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import int8, kernel_targets, requant_block, requant_block16, run_kernel_cases, weights8

from tabula import requant
from tabula.codegen.fusion import folded_bias
from tabula.reference.ops import fully_connected

# (N, Cin, Cout, input_zp, weight_zp)
CASES = [(1, 1, 1, 0, 0), (1, 16, 10, -5, 0), (3, 33, 7, 127, 0), (4, 64, 12, -128, 0), (2, 9, 5, 12, -7),
         (5, 20, 3, -128, 127), (2, 300, 4, 127, -128)]


def _random(rng, n, cin, cout, izp, wzp):
    x = rng.integers(-128, 127, (n, cin), endpoint=True, dtype=np.int8)
    w = rng.integers(-128, 127, (cout, cin), endpoint=True, dtype=np.int8)
    b = rng.integers(-(2**24), 2**24, cout, dtype=np.int32)
    return x, w, b, {"input_zp": izp, "weight_zp": wzp}


@pytest.mark.host
@pytest.mark.parametrize("case", CASES, ids=str)
def test_c_equals_reference(kernel_lib, rng, case):
    x, w, b, a = _random(rng, *case)
    want = fully_connected.run([x, w, b], a)
    got = kernel_lib.fully_connected(x, w, b, **a)
    assert got.dtype == np.int32 and got.shape == (case[0], case[2])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(kernel_lib.fully_connected(x, w, None, **a), want - b)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_reference_equals_float_matmul(rng, case):
    x, w, b, a = _random(rng, *case)
    want = (x.astype(np.float64) - a["input_zp"]) @ (w.astype(np.float64) - a["weight_zp"]).T + b
    np.testing.assert_array_equal(fully_connected.run([x, w, b], a).astype(np.float64), want)


@pytest.mark.host
@pytest.mark.parametrize("target", [2**31 - 1, -(2**31)])
def test_int32_extremes(kernel_lib, target):
    cin = 1000
    x = np.full((1, cin), -128, dtype=np.int8)
    w = np.full((2, cin), -127 if target > 0 else 127, dtype=np.int8)  # (x - zp) = -255
    a = {"input_zp": 127, "weight_zp": 0}
    total = cin * (-255) * int(w[0, 0])
    b = np.full(2, target - total, dtype=np.int32)
    want = np.full((1, 2), target, dtype=np.int32)
    np.testing.assert_array_equal(fully_connected.run([x, w, b], a), want)
    np.testing.assert_array_equal(kernel_lib.fully_connected(x, w, b, **a), want)


def test_reference_rejects_overflow_and_bad_zp():
    x = np.full((1, 2), -128, dtype=np.int8)
    w = np.full((1, 2), -128, dtype=np.int8)  # (-255) * (-255) per term: positive
    with pytest.raises(ValueError, match="overflow"):
        fully_connected.run([x, w, np.array([2**31 - 1], np.int32)], {"input_zp": 127, "weight_zp": 127})
    with pytest.raises(ValueError, match="weight_zp"):
        fully_connected.run([x, w, np.zeros(1, np.int32)], {"input_zp": 0, "weight_zp": -129})


@pytest.mark.host
@pytest.mark.parametrize("n, cin, cout, izp, wzp", [(0, 2, 2, 0, 0), (1, 0, 2, 0, 0), (1, 2, 0, 0, 0),
                                                    (1, 2, 2, 128, 0), (1, 2, 2, 0, -129)])
def test_c_rejects_bad_args(kernel_lib, n, cin, cout, izp, wzp):
    from tabula.harness import host as kl

    x = np.zeros((4, 4), np.int8)
    out = np.zeros((4, 4), np.int32)
    status = kernel_lib.lib.tabula_fully_connected_s8(n, cin, cout, x.ctypes.data_as(kl._i8p), izp,
                                                      x.ctypes.data_as(kl._i8p), wzp, None, None, out.ctypes.data_as(kl._i32p))
    assert status == kl.TABULA_ERR_ARG


# --- int16 x int8 -> int48 (tabula_fully_connected_s16) ------------------------------------------
@pytest.mark.host
@pytest.mark.parametrize("n, cin, cout, wzp", [(1, 1, 1, 0), (3, 33, 7, 0), (2, 300, 4, -128), (4, 64, 12, 127)], ids=str)
def test_s16_c_equals_reference_equals_float(kernel_lib, rng, n, cin, cout, wzp):
    x = rng.integers(-32768, 32767, (n, cin), endpoint=True, dtype=np.int16)
    w = rng.integers(-128, 127, (cout, cin), endpoint=True, dtype=np.int8)
    b = rng.integers(-(2**44), 2**44, cout, dtype=np.int64)
    a = {"input_zp": 0, "weight_zp": wzp}
    want = fully_connected.run([x, w, b], a)
    assert want.dtype == np.int64
    np.testing.assert_array_equal(kernel_lib.fully_connected(x, w, b, **a), want)
    np.testing.assert_array_equal(kernel_lib.fully_connected(x, w, None, **a), want - b)
    np.testing.assert_array_equal((want - b).astype(np.float64), x.astype(np.float64) @ (w.astype(np.float64) - wzp).T)


@pytest.mark.host
@pytest.mark.parametrize("target", [2**47 - 1, -(2**47)])
def test_s16_int48_extremes(kernel_lib, target):
    cin = 1000
    x = np.full((1, cin), -32768, dtype=np.int16)
    w = np.full((2, cin), -127 if target > 0 else 127, dtype=np.int8)
    a = {"input_zp": 0, "weight_zp": -128}  # w - zp = 1 or 255
    total = cin * -32768 * (int(w[0, 0]) + 128)
    b = np.full(2, target - total, dtype=np.int64)
    want = np.full((1, 2), target, dtype=np.int64)
    np.testing.assert_array_equal(fully_connected.run([x, w, b], a), want)
    np.testing.assert_array_equal(kernel_lib.fully_connected(x, w, b, **a), want)
    with pytest.raises(ValueError, match="int48 accumulator overflow"):
        fully_connected.run([x, w, b + (1 if target > 0 else -1)], a)


def test_s16_reference_rejects():
    x = np.zeros((1, 2), np.int16)
    w = np.zeros((1, 2), np.int8)
    with pytest.raises(ValueError, match="input_zp"):
        fully_connected.run([x, w, np.zeros(1, np.int64)], {"input_zp": 1, "weight_zp": 0})
    with pytest.raises(ValueError, match="dtypes"):
        fully_connected.run([x, w, np.zeros(1, np.int32)], {"input_zp": 0, "weight_zp": 0})


@pytest.mark.host
@pytest.mark.parametrize("n, cin, cout, wzp", [(0, 2, 2, 0), (1, 0, 2, 0), (1, 2, 0, 0), (1, 2, 2, 128), (1, 2, 2, -129)])
def test_s16_c_rejects_bad_args(kernel_lib, n, cin, cout, wzp):
    from tabula.harness import host as kl

    x = np.zeros((4, 4), np.int16)
    w = np.zeros((4, 4), np.int8)
    out = np.zeros((4, 4), np.int64)
    status = kernel_lib.lib.tabula_fully_connected_s16(n, cin, cout, x.ctypes.data_as(kl._i16p), w.ctypes.data_as(kl._i8p),
                                                       wzp, None, None, out.ctypes.data_as(kl._i64p))
    assert status == kl.TABULA_ERR_ARG


# ---- every path on every target ---------------------------------------------------------------------
# tabula_fully_connected_s8 / _s16 with and without the fused requantization on the host and the
# emulated cores (tests/helpers.KERNEL_TARGETS), bit-exact with the reference then RESCALE + CLAMP.
# Helium: input tails 1-15, output tails (blocks of 4), a row of 4,200 B, a weight zero point; with the
# folded bias (input_zp 0, as codegen calls it): the GEMV (the assembly loop for rows of a multiple of
# 16 bytes, the C loop otherwise), channel tails 1-3 after blocks of 4; DSP: in_c < 4 (no group), tails
# of 1-3 inputs and rows, in_c 2048 (the largest widened input) and 2049 (widened as read), weight zps.
# (N, Cin, Cout, input_zp, weight_zp, block, edge inputs)
PATH_CASES = [
    (1, 256, 128, -3, 0, "random", False),
    *[(1, ci, (ci * 5) % 15 + 1, 9, 0, "random", False) for ci in range(1, 16)],
    *[(2, 16 * k + k, 16 + k, -128 if k % 2 else 127, 0, "edges", False) for k in range(1, 4)],
    (3, 4200, 3, -128, 0, "random", False),                                                # a row of 4,200 B
    (2, 9, 5, 12, -7, "random", False),                                                    # weight zero point
    *[(1, ci, co, 50 - 20 * ci, 0, "extremes", False) for ci in (1, 2, 3) for co in (1, 4, 5)],
    *[(2, ci, co, -128 if ci % 2 else 127, 0, "extremes", True) for ci, co in ((4, 1), (5, 7), (6, 6), (7, 9), (9, 3))],
    (1, 2048, 6, -3, 0, "extremes", False),                                                # the largest widened input
    (1, 2049, 5, 4, 0, "extremes", False),                                                 # widened as read
    (3, 13, 9, -128, -128, "extremes", True),                                              # weight zp: widened as read
]
# DSP, every shift >= 33 into the whole int8 range (the SSAT epilogue in the 4-row block): in_c % 16 == 0
# (one assembly loop for every block: 640 -> 8, 128 -> 128 as in ad; batch rows; row tails 1-3 after the
# blocks), in_c % 4 == 0 with 1-3 groups after the passes of 4 (20, 36, 52), in_c 4 and 8; a clamp inside
# the range (ties_relu: the general epilogue), inputs at the int8 ends
FOLDED_PATH_CASES = ([c[:5] + ("ties" if c[5] in ("random", "edges") else c[5], c[6]) for c in PATH_CASES if c[4] == 0]
                     + [(4, 64, 130, -7, 0, "edges", False)]
                     + [(1, 640, 8, 0, 0, "ties", True), (1, 128, 128, 0, 0, "ties", False),
                        (3, 48, 13, 0, 0, "ties", True), (2, 16, 7, 0, 0, "ties", False), (1, 32, 6, 0, 0, "ties", True),
                        (2, 20, 9, 0, 0, "ties", True), (1, 36, 12, 0, 0, "ties", False), (1, 52, 4, 0, 0, "ties", True),
                        (1, 4, 8, 0, 0, "ties", True), (2, 8, 5, 0, 0, "ties", False),
                        (2, 64, 10, 0, 0, "ties_relu", True), (1, 20, 8, 0, 0, "ties_relu", False)])
# int16 x int8 (a16w8): (N, Cin, Cout, weight_zp)
S16_PATH_CASES = [(1, 1, 1, 0), (2, 7, 3, 0), (1, 64, 12, 0), (3, 13, 5, 0), (1, 2048, 3, 0), (1, 2049, 2, 0),
                  (2, 9, 4, -3)]


def _requant_cases(rng, label, acc, call, kind, wide=False):
    block = requant_block16(rng, acc) if wide else requant_block(rng, acc, kind)
    return [(f"{label} acc", lambda lib: call(lib, None), acc),
            (f"{label} requant", lambda lib: call(lib, block), requant.reference(acc, block, wide))]


def _path_case(rng, case):
    n, cin, cout, izp, wzp, kind, edges = case
    x, wt = int8(rng, (n, cin), edges), weights8(rng, (cout, cin))
    b = rng.integers(-(2**16), 2**16, cout, dtype=np.int32)
    return x, wt, b, {"input_zp": izp, "weight_zp": wzp}, kind


@pytest.mark.parametrize("target", kernel_targets())
def test_fully_connected_s8_on_every_target(kernels_on, rng, target):
    cases = []
    for case in PATH_CASES:
        x, wt, b, a, kind = _path_case(rng, case)
        call = lambda lib, rq, x=x, wt=wt, b=b, a=a: lib.fully_connected(x, wt, b, **a, requant=rq)  # noqa: E731
        cases += _requant_cases(rng, str(case), fully_connected.run([x, wt, b], a), call, kind)
    run_kernel_cases(kernels_on(target), cases)


@pytest.mark.parametrize("target", kernel_targets())
def test_fully_connected_s8_folded_on_every_target(kernels_on, rng, target):
    """As codegen calls it: bias - input_zp * sum(w), input_zp 0."""
    cases = []
    for case in FOLDED_PATH_CASES:
        x, wt, b, a, kind = _path_case(rng, case)
        bf = folded_bias(wt, b, a["input_zp"])
        call = lambda lib, rq, x=x, wt=wt, bf=bf: lib.fully_connected(x, wt, bf, input_zp=0, weight_zp=0,  # noqa: E731
                                                                      requant=rq)
        cases += _requant_cases(rng, str(case), fully_connected.run([x, wt, b], a), call, kind)
    run_kernel_cases(kernels_on(target), cases)
    ties = [w for label, _, w in cases if "'ties'" in label and label.endswith("requant")]
    assert sum(int(((w > -128) & (w < 127)).sum()) for w in ties) > 100  # the vector epilogue's outputs vary


@pytest.mark.parametrize("target", kernel_targets())
def test_fully_connected_s16_on_every_target(kernels_on, rng, target):
    cases = []
    for case in S16_PATH_CASES:
        n, cin, cout, wzp = case
        x = rng.integers(-32768, 32767, (n, cin), endpoint=True, dtype=np.int16)
        wt = weights8(rng, (cout, cin))
        b = rng.integers(-(2**40), 2**40, cout, dtype=np.int64)
        a = {"input_zp": 0, "weight_zp": wzp}
        call = lambda lib, rq, x=x, wt=wt, b=b, a=a: lib.fully_connected(x, wt, b, **a, requant=rq)  # noqa: E731
        cases += _requant_cases(rng, str(case), fully_connected.run([x, wt, b], a), call, None, wide=True)
    run_kernel_cases(kernels_on(target), cases)


@pytest.mark.parametrize("target", kernel_targets("m4", "m4-noasm", "m33"))
def test_fully_connected_dsp_path_wraps_like_the_portable_path(kernels_on, rng, target):
    """Sums beyond int32 (outside the IR contract) wrap modulo 2^32 on the DSP path exactly as on the
    portable path; so do the requantized outputs."""
    x = np.full((1, 192), -128, np.int8)
    w = rng.choice(np.array([-127, 127], np.int8), (6, 192))
    w[0::2] = -127
    bias = np.full(6, 2**31 - 1000, np.int32)
    rq = requant.pack(3, -128, 127, [2**30 + 12345] * 6, [40] * 6)
    got = {t: [kernels_on(t).fully_connected(x, w, bias, input_zp=127, weight_zp=0, requant=r) for r in (None, rq)]
           for t in (target, "m4-portable")}
    for k in range(2):
        np.testing.assert_array_equal(got[target][k], got["m4-portable"][k])
    assert (got[target][0][..., 0::2] < 0).all()  # every even channel's sum left int32 and wrapped


@pytest.mark.parametrize("target", kernel_targets("host", "m55", "m55-noasm"))
def test_vector_requant_ties_and_extremes(kernels_on, target):
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
    got = kernels_on(target).fully_connected(x, w, acc.astype(np.int32), input_zp=0, weight_zp=0, requant=block)
    np.testing.assert_array_equal(got, requant.reference(acc.astype(np.int32)[None, :], block))



@pytest.mark.parametrize("target", kernel_targets("host", "m55", "m55-noasm", "m55-portable"))
def test_vector_requant16_ties_and_extremes(kernels_on, target):
    """Helium's int48 vector epilogue (tabula_requant4_s16_mve, 4 channels per vector for accumulators
    that fit int32, shifts 17..46) on crafted accumulators (x = 0, so acc = bias): exact ties of both
    signs at shifts 17, 18, 30 and 46 (half toward +infinity: -2.5 -> -2), int32's ends with multiplier
    2^15 - 1, multipliers 0 and 1, a 2^31 accumulator (just outside int32: its block per channel), a
    tail of 3 channels, outputs saturating both ways and a clamp at 0 -- equal to TOSA apply_scale_16
    (reference RESCALE) lane by lane."""
    acc, s = [], []
    for k in (17, 18, 30, 46):
        acc += [(2 * j + 1) << (k - 1) for j in range(-6, 6)] if k < 30 else [(2 * j + 1) << (k - 17) for j in range(-6, 6)]
        s += [k] * 12
    acc += [2**31 - 1, -(2**31), 2**31 - 2, -(2**31) + 1, 0, 1, -1, 2**31, (1 << 30) + 12345, -(3 << 29), 5, -5]
    s += [17, 17, 46, 46, 17, 17, 17, 17, 20, 20, 17, 17]
    acc += [2**30, -(2**30), 77]
    s += [17, 17, 17]
    acc, s = np.array(acc, np.int64), np.array(s)
    cout = acc.size
    m = np.ones(cout, np.int64)
    m[48:52] = 2**15 - 1
    m[52], m[53] = 0, 1
    m[56:60] = 2**14 + 99
    m[60:] = 2**15 - 1
    x, w = np.zeros((1, 24), np.int16), np.ones((cout, 24), np.int8)
    lib = kernels_on(target)
    for lo in (-32768, 0):
        block = requant.pack(0, lo, 32767, m, s)
        want = requant.reference(acc[None, :], block, True)
        got = lib.fully_connected(x, w, acc, input_zp=0, weight_zp=0, requant=block)
        np.testing.assert_array_equal(got, want)
    assert (want == 32767).any() and (want == 0).any()  # saturating and clamped outputs among them
    big = requant.reference(acc[None, :], requant.pack(0, -32768, 32767, m, s), True)
    assert (big == -32768).any() and len(set(big.reshape(-1).tolist())) > 10


@pytest.mark.parametrize("target", kernel_targets())
def test_fully_connected_s16_vector_epilogue_on_every_target(kernels_on, rng, target):
    """int16 rows whose accumulators fit int32 (biases within 2^20; one channel's 2^40 keeps its block
    of 4 out): Helium's vector int48 epilogue, output channel tails 1-3, odd counts, inputs at the int16
    ends, a shift of 16 (the whole call per channel)."""
    cases = []
    for n, cin, cout, big, shifts in ((1, 64, 12, None, None), (2, 37, 7, 4, None), (3, 8, 5, None, None),
                                      (1, 200, 10, None, {2: 16})):
        x = rng.choice(np.array([-32768, 32767], np.int16), (n, cin)) if n == 3 else \
            rng.integers(-32768, 32767, (n, cin), endpoint=True, dtype=np.int16)
        wt = weights8(rng, (cout, cin))
        b = rng.integers(-(2**20), 2**20, cout, dtype=np.int64)
        if big is not None:
            b[big] = 2**40
        acc = fully_connected.run([x, wt, b], {"input_zp": 0, "weight_zp": 0})
        block = requant_block16(rng, acc, -32768, shifts)
        cases.append((f"{(n, cin, cout)}", lambda lib, x=x, wt=wt, b=b, r=block: lib.fully_connected(
            x, wt, b, input_zp=0, weight_zp=0, requant=r), requant.reference(acc, block, True)))
    run_kernel_cases(kernels_on(target), cases)
