"""ADD / SUB of two activations with their requantization, fused (codegen's ADD_REQUANT ->
``tabula_add_requant_<t>``): the C kernel == the IR sequence it replaces (RESCALE a, RESCALE b,
ADD / SUB, RESCALE, CLAMP) through the Python reference, bit for bit, int8 and int16, on random and
edge inputs (zero points at the int8 ends, every input code, saturation, rounding ties, shifts at
their ends, CLAMP bounds inside the range); bad parameters are refused; :func:`fuse_add_requant`
builds the parameters the sequence implies, or leaves the sequence alone; a residual block runs
through the generated C bit-exact.  scheme=mixed: the six kernels ``tabula_add_requant_<ta>_<tb>_<to>``
(a, b and the output each int8 or int16, not all one type) == the sequence on the host, the Cortex-M55
and the Cortex-M4, and the fusion takes mixed-dtype sequences."""
from __future__ import annotations

import numpy as np
import pytest

from tabula.codegen.fusion import FUSED_ADD_REQUANT, fuse_add_requant
from tabula.ir import Graph, Op, Tensor
from tabula.reference.interpreter import run_graph
from tabula.reference.ops import add, clamp, rescale, sub

from helpers import kernel_targets, run_kernel_cases

TYPES = {"int8": (np.int8, -128, 127), "int16": (np.int16, -32768, 32767)}


def _sequence(a: np.ndarray, b: np.ndarray, p, to: str | None = None) -> np.ndarray:
    """The IR ops' reference, op by op (strict=False: exact for any value, as the C kernels), for inputs of
    their own types and an output of type ``to`` (default: ``a``'s)."""
    to = to or ("int8" if a.dtype == np.int8 else "int16")
    ta = rescale.run([a], {"input_zp": p[0], "output_zp": 0, "multiplier": [p[1]], "shift": [p[2]],
                           "output_dtype": "int32"}, strict=False)
    tb = rescale.run([b], {"input_zp": p[3], "output_zp": 0, "multiplier": [p[4]], "shift": [p[5]],
                           "output_dtype": "int32"}, strict=False)
    acc = (sub if p[6] else add).run([ta, tb], {})
    y = rescale.run([acc], {"input_zp": 0, "output_zp": p[7], "multiplier": [p[10]], "shift": [p[11]],
                            "output_dtype": to}, strict=False)
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


# ---- scheme=mixed: a, b and the output each int8 or int16 (tabula_add_requant_<ta>_<tb>_<to>) ------------
MIXED = [c for c in ((ta, tb, to) for ta in TYPES for tb in TYPES for to in TYPES) if len(set(c)) > 1]
BITS = {"int8": 8, "int16": 15}  # |x - zp| < 2^BITS for the type's values and zero points


def _mixed_params(rng, combo, kind: str) -> list[int]:
    """As :func:`_params`, each term's shift from its own type's width, the output's from the output's;
    ``kind``: random, zp_low / zp_high (every zero point at its type's end), saturate (most results past
    both output ends), sub, clamp (a CLAMP narrowing inside the output's range)."""
    ta, tb, to = combo
    _, qlo, qhi = TYPES[to]

    def zp(t, end=None):
        if t == "int16":
            return 0
        return {"low": -128, "high": 127}.get(end, int(rng.integers(-128, 128)))

    end = {"zp_low": "low", "zp_high": "high"}.get(kind)
    sa, sb = (int(rng.integers(BITS[t] + 3, BITS[t] + 7)) for t in (ta, tb))
    ma, mb = (int(rng.integers(1 << 29, 1 << 31)) for _ in range(2))
    m, s = int(rng.integers(1 << 30, 1 << 31)), int(rng.integers(28 + 31 - BITS[to] - 3, 28 + 31 - BITS[to] + 3))
    p = [zp(ta, end), ma, sa, zp(tb, end), mb, sb, int(rng.integers(0, 2)), zp(to, end), qlo, qhi, m, s]
    if kind == "saturate":
        p[11] = max(2, p[11] - 6)
    elif kind == "sub":
        p[6] = 1
    elif kind == "clamp":  # a CLAMP narrowing both ends, and an output multiplier that reaches them
        p[8], p[9], p[11] = qlo + (qhi - qlo) // 4, qhi - (qhi - qlo) // 4, max(2, p[11] - 6)
    return p


@pytest.mark.parametrize("target", kernel_targets("host", "m55", "m4"))
@pytest.mark.parametrize("combo", [(t, t, t) for t in TYPES] + MIXED, ids="_".join)
def test_mixed_c_equals_the_ir_sequence(kernels_on, rng, target, combo):
    """Every kernel (the two uniform ones too: the body is shared) == the sequence, bit for bit: random codes, the types' ends in every pairing,
    zero points at both ends of each type, saturation at both output ends, SUB, a CLAMP narrowing, counts
    0, 1, odd, and one past TABULA_ADD_RQ_TABLE_MIN (an int8 input's tabulated term)."""
    ta, tb, to = combo
    cases = []
    for kind in ("random", "zp_low", "zp_high", "saturate", "sub", "clamp"):
        for n in (0, 1, 37, 601) if kind == "random" else (25, 301, 777):
            p = _mixed_params(rng, combo, kind)
            a, b = (rng.integers(TYPES[t][1], TYPES[t][2] + 1, n).astype(TYPES[t][0]) for t in (ta, tb))
            if n == 25:  # the types' ends in every pairing
                a = np.repeat(np.array([TYPES[ta][1], TYPES[ta][2], 0, -1, 1], TYPES[ta][0]), 5)
                b = np.tile(np.array([TYPES[tb][1], TYPES[tb][2], 0, -1, 1], TYPES[tb][0]), 5)
            want = _sequence(a, b, p, to)
            if kind == "saturate" and n > 25:
                _, qlo, qhi = TYPES[to]
                assert (want == qlo).any() and (want == qhi).any() and ((want == qlo) | (want == qhi)).mean() > 0.3
            if kind == "clamp" and n > 25:
                assert ((want == p[8]) | (want == p[9])).mean() > 0.1  # the CLAMP's bounds are reached
            cases.append((f"{'_'.join(combo)} {kind} n={n} params {p}",
                          lambda lib, a=a, b=b, p=p: lib.add_requant(a, b, p, TYPES[to][0]), want))
    run_kernel_cases(kernels_on(target), cases)


@pytest.mark.host
@pytest.mark.parametrize("combo", MIXED, ids="_".join)
def test_mixed_zero_points_are_checked_against_their_own_type(kernel_lib, combo):
    from tabula.harness.host import KernelError

    ta, tb, to = combo
    a, b = np.zeros(4, TYPES[ta][0]), np.zeros(4, TYPES[tb][0])
    p = [0, 1 << 30, 20, 0, 1 << 30, 20, 0, 0, TYPES[to][1], TYPES[to][2], 1 << 30, 40]
    kernel_lib.add_requant(a, b, p, TYPES[to][0])
    for i, t in ((0, ta), (3, tb), (7, to)):
        for v in (-129, 128) + ((5,) if t == "int16" else ()):
            q = list(p)
            q[i] = v
            with pytest.raises(KernelError):
                kernel_lib.add_requant(a, b, q, TYPES[to][0])
        if t == "int8":  # an int8 end is fine
            q = list(p)
            q[i] = -128
            kernel_lib.add_requant(a, b, q, TYPES[to][0])
    for lo, hi in ((TYPES[to][1] - 1, 0), (0, TYPES[to][2] + 1)):  # out_min / out_max against the output's range
        q = list(p)
        q[8], q[9] = lo, hi
        with pytest.raises(KernelError):
            kernel_lib.add_requant(a, b, q, TYPES[to][0])


def _mixed_residual_graph(combo, clamp_after: bool, subtract: bool = False, shape=(1, 4, 4, 3)) -> Graph:
    """The sequence the lowering emits for ``a + b`` of an a, b and output of the types ``combo``."""
    g = Graph()
    zp = {n: (0 if t == "int16" else z) for n, t, z in zip(("a", "b", "y"), combo, (5, -7, 3))}
    g.add_tensor(Tensor("a", shape, combo[0], 0.05, zp["a"]))
    g.add_tensor(Tensor("b", shape, combo[1], 0.0007, zp["b"]))
    for n in ("a32", "b32", "acc"):
        g.add_tensor(Tensor(n, shape, "int32"))
    g.add_tensor(Tensor("y", shape, combo[2], 0.1, zp["y"]))
    g.add_op(Op("RESCALE", ["a"], ["a32"], {"input_zp": zp["a"], "output_zp": 0, "multiplier": [1 << 30],
                                           "shift": [BITS[combo[0]] + 3]}))
    g.add_op(Op("RESCALE", ["b"], ["b32"], {"input_zp": zp["b"], "output_zp": 0, "multiplier": [3 << 29],
                                           "shift": [BITS[combo[1]] + 4]}))
    g.add_op(Op("SUB" if subtract else "ADD", ["a32", "b32"], ["acc"], {}))
    g.add_op(Op("RESCALE", ["acc"], ["y"], {"input_zp": 0, "output_zp": zp["y"], "multiplier": [1 << 30],
                                           "shift": [28 + 31 - BITS[combo[2]]]}))
    g.inputs, g.outputs = ["a", "b"], ["y"]
    if clamp_after:
        g.add_tensor(Tensor("r", shape, combo[2], 0.1, zp["y"]))
        g.add_op(Op("CLAMP", ["y"], ["r"], {"min": zp["y"], "max": TYPES[combo[2]][2]}))
        g.outputs = ["r"]
    return g


@pytest.mark.host
@pytest.mark.parametrize("combo", MIXED, ids="_".join)
@pytest.mark.parametrize("clamp_after", [False, True])
@pytest.mark.parametrize("subtract", [False, True])
def test_mixed_fusion_equals_the_graph(kernel_lib, rng, combo, clamp_after, subtract):
    """A mixed-dtype residual ADD / SUB [+ ReLU] is one ADD_REQUANT whose kernel equals the unfused graph
    run by the reference."""
    g = _mixed_residual_graph(combo, clamp_after, subtract)
    f = fuse_add_requant(g)
    assert [o.op for o in f.ops] == [FUSED_ADD_REQUANT]
    assert not {"a32", "b32", "acc"} & set(f.tensors)
    (op,) = f.ops
    p = [int(v) for v in f.constants[op.inputs[2]]]
    assert p[6] == int(subtract) and p[8] == (g.tensors["y"].zero_point if clamp_after else TYPES[combo[2]][1])
    a, b = (rng.integers(TYPES[t][1], TYPES[t][2] + 1, (1, 4, 4, 3)).astype(TYPES[t][0]) for t in combo[:2])
    want = run_graph(g, [a, b])[0]
    assert want.dtype == TYPES[combo[2]][0]
    np.testing.assert_array_equal(kernel_lib.add_requant(a, b, p, want.dtype).reshape(want.shape), want)


@pytest.mark.host
@pytest.mark.parametrize("combo", MIXED, ids="_".join)
def test_mixed_residual_add_is_one_kernel_call(combo):
    """The codegen op names the kernel by the three dtypes (the uniform ones keep their names)."""
    from tabula.codegen.ops import add_requant as cg

    (op,) = fuse_add_requant(_mixed_residual_graph(combo, True)).ops
    ctx = cg.context(op, fuse_add_requant(_mixed_residual_graph(combo, True)), lambda n: n)
    name = f"tabula_add_requant_{ctx['sfx']}"
    assert name == "tabula_add_requant_" + "_".join({"int8": "s8", "int16": "s16"}[t] for t in combo)
    assert name in cg.KERNELS
    assert cg.kernel_suffix("int8", "int8", "int8") == "s8" and cg.kernel_suffix("int16", "int16", "int16") == "s16"
