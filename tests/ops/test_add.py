"""ADD int32: C == reference == exact Python ints on random data and at the int32 ends; overflow is
an error in the reference (the IR forbids it)."""
from __future__ import annotations

import numpy as np
import pytest

from tabula.reference.ops import add

I32_MIN, I32_MAX = -(2**31), 2**31 - 1


@pytest.mark.host
def test_c_equals_reference(kernel_lib, rng):
    a = rng.integers(I32_MIN // 2, I32_MAX // 2, (4, 5, 6), endpoint=True).astype(np.int32)
    b = rng.integers(I32_MIN // 2, I32_MAX // 2, (4, 5, 6), endpoint=True).astype(np.int32)
    want = add.run([a, b], {})
    assert want.dtype == np.int32
    np.testing.assert_array_equal(want, a.astype(np.int64) + b)
    np.testing.assert_array_equal(kernel_lib.add(a, b), want)


@pytest.mark.host
def test_int32_ends(kernel_lib):
    a = np.array([I32_MAX, I32_MIN, I32_MAX, I32_MIN, 0, -1], np.int32)
    b = np.array([0, 0, I32_MIN, I32_MAX, I32_MAX, I32_MIN + 1], np.int32)
    want = [I32_MAX, I32_MIN, -1, -1, I32_MAX, I32_MIN]
    np.testing.assert_array_equal(add.run([a, b], {}), want)
    np.testing.assert_array_equal(kernel_lib.add(a, b), want)


@pytest.mark.parametrize("a, b", [(I32_MAX, 1), (I32_MIN, -1)])
def test_reference_rejects_overflow(a, b):
    with pytest.raises(ValueError, match="overflow"):
        add.run([np.array([a], np.int32), np.array([b], np.int32)], {})


def test_reference_rejects_shapes_and_dtypes():
    with pytest.raises(ValueError, match="do not broadcast"):
        add.run([np.zeros(3, np.int32), np.zeros(4, np.int32)], {})
    with pytest.raises(ValueError, match="ranks"):
        add.run([np.zeros((2, 3), np.int32), np.zeros(3, np.int32)], {})
    with pytest.raises(ValueError, match="int32"):
        add.run([np.zeros(3, np.int16), np.zeros(3, np.int16)], {})


@pytest.mark.host
def test_rank_0_scalars(kernel_lib):
    """TOSA 1.0 ADD / SUB / MUL take rank 0 too: one element, the same-shape kernels; C == reference."""
    from tabula.reference.ops import mul, sub

    a, b, c = np.array(-2_000_000_000, np.int32), np.array(1_999_999_999, np.int32), np.array(7, np.int32)
    for spec, got, ins, attrs, want in (
            (add, kernel_lib.add(a, b), [a, b], {}, -1),
            (sub, kernel_lib.sub(a, c), [a, c], {}, -2_000_000_007),
            (mul, kernel_lib.mul(a, b, 40), [a, b], {"shift": 40}, (-2_000_000_000 * 1_999_999_999 + 2**39) >> 40)):
        ref = spec.run(ins, attrs)
        assert ref.shape == got.shape == () and ref.dtype == got.dtype == np.int32
        assert int(ref) == int(got) == want, spec.OP


@pytest.mark.host
def test_c_rejects_negative_count(kernel_lib):
    from tabula.harness import host as kl

    x = np.zeros(4, np.int32)
    p = x.ctypes.data_as(kl._i32p)
    assert kernel_lib.lib.tabula_add_s32(p, p, -1, p) == kl.TABULA_ERR_ARG


#: (a shape, b shape): NHWC per-channel and per-pixel operands, scalars, both sides broadcast, rank 1
#: and 6, an empty axis (TOSA broadcasting: equal ranks, each axis equal or 1).
BROADCAST = [
    ((1, 4, 4, 8), (1, 1, 1, 8)), ((1, 4, 4, 8), (1, 4, 4, 1)), ((1, 1, 1, 8), (1, 4, 4, 8)),
    ((2, 3, 5), (1, 1, 5)), ((2, 3, 5), (2, 1, 1)), ((1, 3, 17), (1, 1, 1)), ((1, 1, 1), (2, 3, 17)),
    ((4, 1, 6), (1, 5, 1)), ((3, 1), (1, 4)), ((7,), (1,)), ((1,), (7,)), ((2, 1, 3, 1, 2, 3), (1, 4, 3, 2, 1, 3)),
    ((2, 0, 3), (1, 1, 3)),
]


@pytest.mark.host
@pytest.mark.parametrize("sa, sb", BROADCAST)
def test_broadcast_c_equals_reference(kernel_lib, rng, sa, sb):
    a = rng.integers(I32_MIN // 2, I32_MAX // 2, sa, endpoint=True).astype(np.int32)
    b = rng.integers(I32_MIN // 2, I32_MAX // 2, sb, endpoint=True).astype(np.int32)
    want = add.run([a, b], {})
    np.testing.assert_array_equal(want, a.astype(np.int64) + b)  # numpy's broadcasting
    np.testing.assert_array_equal(kernel_lib.add_bcast(a, b), want)


@pytest.mark.host
@pytest.mark.parametrize("sa, sb", BROADCAST)
def test_collapsed_shapes_give_the_same_result(kernel_lib, rng, sa, sb):
    """codegen merges axes before the call; the kernel on the merged shapes equals the full ones."""
    from tabula.codegen.ops._broadcast import collapse

    a = rng.integers(-1000, 1000, sa).astype(np.int32)
    b = rng.integers(-1000, 1000, sb).astype(np.int32)
    ca, cb = collapse(sa, sb)
    assert len(ca) == len(cb) <= len(sa)
    got = kernel_lib.add_bcast(a.reshape(ca), b.reshape(cb))
    np.testing.assert_array_equal(got.reshape(-1), add.run([a, b], {}).reshape(-1))


def test_collapse_merges_axes_broadcast_alike():
    from tabula.codegen.ops._broadcast import collapse

    assert collapse((1, 4, 4, 8), (1, 1, 1, 8)) == ([16, 8], [1, 8])
    assert collapse((1, 4, 4, 8), (1, 4, 4, 8)) == ([128], [128])
    assert collapse((1, 4, 4, 8), (1, 1, 1, 1)) == ([128], [1])
    assert collapse((2, 1, 3, 1, 2, 3), (1, 4, 3, 2, 1, 3)) == ([2, 1, 3, 1, 2, 3], [1, 4, 3, 2, 1, 3])
    assert collapse((1, 1), (1, 1)) == ([1], [1])


@pytest.mark.host
def test_broadcast_int32_ends(kernel_lib):
    a = np.array([[I32_MAX], [I32_MIN], [I32_MIN + 5]], np.int32)
    b = np.array([[0, 0]], np.int32), np.array([[-5, I32_MAX]], np.int32)
    np.testing.assert_array_equal(kernel_lib.add_bcast(a[:2], b[0]), [[I32_MAX, I32_MAX], [I32_MIN, I32_MIN]])
    want = [[I32_MIN, 4]]
    np.testing.assert_array_equal(add.run([a[2:], b[1]], {}), want)
    np.testing.assert_array_equal(kernel_lib.add_bcast(a[2:], b[1]), want)


@pytest.mark.host
@pytest.mark.parametrize("sa, sb, rank", [((2,), (3,), 1), ((1,), (1,), 0), ((1,) * 7, (1,) * 7, 7), ((-1,), (1,), 1)])
def test_broadcast_c_rejects(kernel_lib, sa, sb, rank):
    from tabula.harness import host as kl

    x = np.zeros(8, np.int32)
    p = x.ctypes.data_as(kl._i32p)
    a_shape, b_shape = np.array(sa, np.int32), np.array(sb, np.int32)
    assert kernel_lib.lib.tabula_add_bcast_s32(p, a_shape.ctypes.data_as(kl._i32p), p, b_shape.ctypes.data_as(kl._i32p),
                                               rank, p) == kl.TABULA_ERR_ARG
