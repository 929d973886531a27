"""ADD / SUB of two activations with their requantization, fused (codegen's ADD_REQUANT ->
``tabula_add_requant_<t>``): the C kernel == the IR sequence it replaces (RESCALE a, RESCALE b,
ADD / SUB, RESCALE, CLAMP) through the Python reference, bit for bit, int8 and int16, on random and
edge inputs (zero points at the int8 ends, every input code, saturation, rounding ties, shifts at
their ends, CLAMP bounds inside the range); bad parameters are refused; :func:`fuse_add_requant`
builds the parameters the sequence implies, or leaves the sequence alone; a residual block runs
through the generated C bit-exact."""
from __future__ import annotations

import numpy as np
import pytest

from tabula.codegen.fusion import FUSED_ADD_REQUANT, fuse_add_requant
from tabula.ir import Graph, Op, Tensor
from tabula.reference.interpreter import run_graph
from tabula.reference.ops import add, clamp, rescale, sub

TYPES = {"int8": (np.int8, -128, 127), "int16": (np.int16, -32768, 32767)}


def _sequence(a: np.ndarray, b: np.ndarray, p) -> np.ndarray:
    """The IR ops' reference, op by op (strict=False: exact for any value, as the C kernels)."""
    t = "int8" if a.dtype == np.int8 else "int16"
    ta = rescale.run([a], {"input_zp": p[0], "output_zp": 0, "multiplier": [p[1]], "shift": [p[2]],
                           "output_dtype": "int32"}, strict=False)
    tb = rescale.run([b], {"input_zp": p[3], "output_zp": 0, "multiplier": [p[4]], "shift": [p[5]],
                           "output_dtype": "int32"}, strict=False)
    acc = (sub if p[6] else add).run([ta, tb], {})
    y = rescale.run([acc], {"input_zp": 0, "output_zp": p[7], "multiplier": [p[10]], "shift": [p[11]],
                            "output_dtype": t}, strict=False)
    return clamp.run([y], {"min": p[8], "max": p[9]})


def _params(rng, t: str, kind: str) -> list[int]:
    """Parameters as the lowering derives them: each term on a 2^28 grid (input shifts so that
    |term| <= 2^28), the output RESCALE from that grid back to the output's."""
    _, qlo, qhi = TYPES[t]
    bits = 8 if t == "int8" else 15
    zp = (lambda: int(rng.integers(-128, 128))) if t == "int8" else (lambda: 0)
    sa, sb = (int(rng.integers(bits + 3, bits + 7)) for _ in range(2))  # factor <= 2^(28 - bits)
    ma, mb = (int(rng.integers(1 << 29, 1 << 31)) for _ in range(2))
    m, s = int(rng.integers(1 << 30, 1 << 31)), int(rng.integers(28 + 31 - bits - 3, 28 + 31 - bits + 3))
    p = [zp(), ma, sa, zp(), mb, sb, int(rng.integers(0, 2)), zp(), qlo, qhi, m, s]
    if kind == "edges":  # zero points at the ends, a multiplier of 0, the largest multiplier
        if t == "int8":
            p[0], p[3], p[7] = -128, 127, int(rng.choice([-128, 127]))
        p[4] = 0 if rng.random() < 0.5 else (1 << 31) - 1
    elif kind == "ties":  # m = 2^k: every result a multiple of 1/2 .. 1/16 LSB, the .5 ones ties
        p[1], p[4], p[10] = 1 << 30, 1 << 30, 1 << 30
        p[2], p[5] = bits + 4, bits + 5
        p[11] = 30 + int(rng.integers(1, 5))
    elif kind == "saturate":  # an output multiplier that drives most results past the type's ends
        p[11] = max(2, p[11] - 6)
    elif kind == "clamp":  # a fused ReLU: [zero point, max]
        p[8] = p[7] if t == "int8" else 0
    elif kind == "shift_ends":  # the output RESCALE at shift 62 (all round to the zero point) or 2
        p[11] = int(rng.choice([2, 62]))
    return p


@pytest.mark.host
@pytest.mark.parametrize("t", ["int8", "int16"])
@pytest.mark.parametrize("kind", ["random", "edges", "ties", "saturate", "clamp", "shift_ends"])
def test_c_equals_the_ir_sequence(kernel_lib, rng, t, kind):
    np_t, qlo, qhi = TYPES[t]
    for trial in range(8):
        p = _params(rng, t, kind)
        n = int(rng.integers(1, 300) if trial % 2 else rng.integers(512, 1500))  # int8: direct / tabulated terms
        a = rng.integers(qlo, qhi + 1, n).astype(np_t)
        b = rng.integers(qlo, qhi + 1, n).astype(np_t)
        if trial < 2:  # the type's ends in every pairing (25 elements, and 25 x 24 for the int8 tables)
            ends = np.array([qlo, qhi, 0, -1, 1], np_t)
            a, b = np.repeat(ends, 5), np.tile(ends, 5)
            if trial == 1:
                a, b = np.tile(a, 24), np.tile(b, 24)
        want = _sequence(a, b, p)
        got = kernel_lib.add_requant(a, b, p)
        np.testing.assert_array_equal(got, want, err_msg=f"{t} {kind} params {p}")
        if kind == "saturate":
            assert ((want == p[8]) | (want == p[9])).mean() > 0.3  # the case does saturate


@pytest.mark.host
def test_every_int8_code_pair(kernel_lib, rng):
    """All 65,536 (a, b) int8 pairs through parameters of a residual ADD (ResNet-8's first, as lowered)."""
    a, b = (v.astype(np.int8).reshape(-1) for v in np.meshgrid(np.arange(-128, 128), np.arange(-128, 128)))
    for p in ([-128, 1897436123, 13, -3, 1673124617, 11, 0, -128, -128, 127, 1337308975, 49],
              [38, 1431581870, 12, 16, 1431692713, 11, 1, 5, 5, 127, 1789616456, 48]):
        np.testing.assert_array_equal(kernel_lib.add_requant(a, b, p), _sequence(a, b, p))


@pytest.mark.host
@pytest.mark.parametrize("bad", [{0: -129}, {3: 128}, {6: 2}, {8: -129}, {8: 100, 9: 50}, {10: -1}, {11: 1}, {2: 63},
                                 {9: 128}])
def test_bad_parameters_are_refused(kernel_lib, bad):
    from tabula.harness.host import KernelError

    p = [0, 1 << 30, 20, 0, 1 << 30, 20, 0, 0, -128, 127, 1 << 30, 40]
    for i, v in bad.items():
        p[i] = v
    kernel_lib.add_requant(np.zeros(4, np.int8), np.zeros(4, np.int8), [0, 1 << 30, 20, 0, 1 << 30, 20, 0, 0, -128, 127,
                                                                        1 << 30, 40])  # the unchanged block is fine
    with pytest.raises(KernelError):
        kernel_lib.add_requant(np.zeros(4, np.int8), np.zeros(4, np.int8), p)
    with pytest.raises(KernelError):  # int16 carries no zero points
        kernel_lib.add_requant(np.zeros(4, np.int16), np.zeros(4, np.int16), [3, 1 << 30, 20, 0, 1 << 30, 20, 0, 0, 0, 9, 1 << 30, 40])


def _residual_graph(t: str, clamp_after: bool, subtract: bool = False, shape=(1, 4, 4, 3)) -> Graph:
    """The sequence the lowering emits for ``a + b`` (or ``a - b``) of two activations [, then a ReLU]."""
    zp = 0 if t == "int16" else 5
    sh = 10 if t == "int8" else 17  # the input RESCALEs' shifts: TOSA's REQUIRE |x - zp| < 2^(shift - 1)
    g = Graph()
    for n in ("a", "b"):
        g.add_tensor(Tensor(n, shape, t, 0.05, zp if n == "a" else -zp))
    g.add_tensor(Tensor("a32", shape, "int32"))
    g.add_tensor(Tensor("b32", shape, "int32"))
    g.add_tensor(Tensor("acc", shape, "int32"))
    g.add_tensor(Tensor("y", shape, t, 0.1, zp))
    g.add_op(Op("RESCALE", ["a"], ["a32"], {"input_zp": zp, "output_zp": 0, "multiplier": [1 << 30], "shift": [sh]}))
    g.add_op(Op("RESCALE", ["b"], ["b32"], {"input_zp": -zp, "output_zp": 0, "multiplier": [3 << 29], "shift": [sh + 1]}))
    g.add_op(Op("SUB" if subtract else "ADD", ["a32", "b32"], ["acc"], {}))
    g.add_op(Op("RESCALE", ["acc"], ["y"], {"input_zp": 0, "output_zp": zp, "multiplier": [1 << 30], "shift": [42 if t == "int8" else 35]}))
    g.inputs, g.outputs = ["a", "b"], ["y"]
    if clamp_after:
        g.add_tensor(Tensor("r", shape, t, 0.1, zp))
        g.add_op(Op("CLAMP", ["y"], ["r"], {"min": zp, "max": TYPES[t][2]}))
        g.outputs = ["r"]
    return g


@pytest.mark.host
@pytest.mark.parametrize("t", ["int8", "int16"])
@pytest.mark.parametrize("clamp_after", [False, True])
@pytest.mark.parametrize("subtract", [False, True])
def test_fusion_builds_the_sequences_parameters(kernel_lib, rng, t, clamp_after, subtract):
    g = _residual_graph(t, clamp_after, subtract)
    f = fuse_add_requant(g)
    assert [o.op for o in f.ops] == [FUSED_ADD_REQUANT]
    assert not {"a32", "b32", "acc"} & set(f.tensors) and ("y" in f.tensors) == (not clamp_after)
    (op,) = f.ops
    p = [int(v) for v in f.constants[op.inputs[2]]]
    assert p[6] == int(subtract) and p[8] == (TYPES[t][1] if not clamp_after else g.tensors["y"].zero_point)
    np_t, qlo, qhi = TYPES[t]
    a, b = (rng.integers(qlo, qhi + 1, (1, 4, 4, 3)).astype(np_t) for _ in range(2))
    want = run_graph(g, [a, b])[0]
    np.testing.assert_array_equal(kernel_lib.add_requant(a, b, p).reshape(want.shape), want)


@pytest.mark.host
def test_sequences_with_other_readers_or_broadcasts_stay_as_they_are():
    g = _residual_graph("int8", False)
    g.outputs = ["y", "acc"]  # the int32 sum is a graph output
    assert [o.op for o in fuse_add_requant(g).ops] == ["RESCALE", "RESCALE", "ADD", "RESCALE"]
    g = _residual_graph("int8", False)
    g.ops[3].attrs["input_zp"] = 0
    g.ops[1].attrs["output_zp"] = 0
    g.ops[0].attrs["multiplier"] = [1 << 30, 1 << 30, 1 << 30]  # per-channel: not what the kernel takes
    g.ops[0].attrs["shift"] = [10, 10, 10]
    assert FUSED_ADD_REQUANT not in [o.op for o in fuse_add_requant(g).ops]
