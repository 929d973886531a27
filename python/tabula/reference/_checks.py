"""What the op specs in ``ops/`` share: the tensor type a contract sees, the checks every contract
and reference uses, and the helpers of the facts every spec declares (MAC count, accumulator bound);
kept outside that folder, which holds only ops."""
from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
from tabula import dtypes


class TType(NamedTuple):
    """What an op contract sees of a tensor: its ``shape`` and IR ``dtype`` name (``int48`` for
    an int64 array of the reference)."""

    shape: tuple[int, ...]
    dtype: str

    @property
    def rank(self) -> int:
        return len(self.shape)


class AccBound(NamedTuple):
    """What a spec's ``bound`` proves about its accumulator: ``reach`` (int64 ``[Cout]`` per output
    channel, or ``[1]`` for the whole op) is the largest ``|acc|`` any input codes can give, and
    ``dtype`` the accumulator it must fit (``"int32"`` or ``"int48"``, TOSA 1.0)."""

    reach: np.ndarray
    dtype: str

    def over(self) -> np.ndarray:
        """Indices of ``reach`` beyond ``dtype``'s range (empty when the accumulator is proven to fit)."""
        return np.flatnonzero(self.reach > dtypes.range_of(self.dtype)[1])


def input_reach(dtype: str, zero_point: int) -> int:
    """``max |x - zero_point|`` over every code ``x`` of ``dtype``: inside the program a tensor may hold
    any code of its dtype, so bounds use the whole range."""
    lo, hi = dtypes.range_of(dtype)
    return max(int(zero_point) - lo, hi - int(zero_point))


def weighted_bound(ins: list[TType], attrs: dict, rows: np.ndarray, bias: np.ndarray) -> AccBound:
    """The accumulator bound of a weighted sum ``acc[c] = b[c] + sum_k (x_k - input_zp) (w[c,k] - weight_zp)``
    (CONV2D, DEPTHWISE_CONV2D, FULLY_CONNECTED): ``rows`` the weights per output channel ``[Cout, taps]``,
    ``bias`` ``[Cout]``; ``|acc[c]| <= input_reach * sum_k |w[c,k] - weight_zp| + |b[c]|``, to fit the
    accumulator of ``x`` (int32 for int8, int48 for int16)."""
    xmax = input_reach(ins[0].dtype, attrs.get("input_zp", 0))
    wz = np.abs(np.asarray(rows, dtype=np.int64) - int(attrs.get("weight_zp", 0))).sum(axis=1)
    return AccBound(xmax * wz + np.abs(np.asarray(bias, dtype=np.int64)), dtypes.ACC_DTYPE[ins[0].dtype])


def no_macs(ins: list[TType], out: TType, attrs: dict) -> int:
    """The MAC count of an op without a weighted sum: 0."""
    return 0


def ttype_of(a: np.ndarray) -> TType:
    """The :class:`TType` of a numpy array (int64 arrays hold int48)."""
    a = np.asarray(a)
    return TType(tuple(int(d) for d in a.shape), dtypes.of(a).name)


def check_arrays(contract: Callable[[list[TType], dict], TType], inputs: list[np.ndarray], attrs: dict) -> TType:
    """Run an op's ``contract`` on the arrays a reference ``run`` was given; returns the output type."""
    return contract([ttype_of(a) for a in inputs], attrs)


def need(cond: bool, op: str, msg: str) -> None:
    """Raise ValueError ``"<op>: <msg>"`` unless ``cond``: an argument outside the op's contract."""
    if not cond:
        raise ValueError(f"{op}: {msg}")


def n_inputs(op: str, ins: list, n: int) -> None:
    """Exactly ``n`` inputs."""
    need(len(ins) == n, op, f"takes {n} input(s), got {len(ins)}")


def ints(op: str, attrs: dict, key: str, n: int) -> list[int]:
    """Attribute ``key`` as a list of ``n`` Python ints (ValueError otherwise)."""
    v = attrs[key]
    need(isinstance(v, (list, tuple)) and len(v) == n and all(isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in v),
         op, f"{key} must be {n} integers, got {v!r}")
    return [int(i) for i in v]


def check_zero_point(op: str, name: str, zp: int, dtype: str) -> None:
    """A zero point must be one the tensor's dtype may carry (TOSA 1.0, signed: any int8 value for
    int8, 0 for wider types)."""
    lo, hi = dtypes.zero_point_range(dtype)
    if dtype == "int8":
        need(lo <= int(zp) <= hi, op, f"{name}={zp} outside the int8 range [{lo}, {hi}]")
    else:
        need(int(zp) == 0, op, f"{name}={zp}: {dtype} zero points must be 0 (TOSA 1.0, signed types)")


def to_int32_exact(op: str, acc: np.ndarray) -> np.ndarray:
    """Return the int64 accumulator as int32; the IR forbids wrapping, so an overflow raises."""
    lo, hi = dtypes.range_of("int32")
    if acc.size and (acc.min() < lo or acc.max() > hi):
        raise ValueError(f"{op}: int32 accumulator overflow (range {acc.min()}..{acc.max()})")
    return acc.astype(np.int32)


def to_int48_exact(op: str, acc: np.ndarray) -> np.ndarray:
    """Return the accumulator as int64 holding TOSA int48; a value outside 48 bits raises (the IR
    forbids wrapping: an int48 accumulator cannot hold it)."""
    check_int48(op, "int48 accumulator overflow", acc)
    return np.asarray(acc, dtype=np.int64)


def to_acc_exact(op: str, acc: np.ndarray, acc_dtype: str) -> np.ndarray:
    """:func:`to_int32_exact` or :func:`to_int48_exact` by the accumulator dtype."""
    return to_int32_exact(op, acc) if acc_dtype == "int32" else to_int48_exact(op, acc)


def check_int48(op: str, what: str, x: np.ndarray) -> None:
    """Raise ``"<op>: <what> ..."`` unless every value of ``x`` fits int48 [-2^47, 2^47)."""
    lo, hi = dtypes.range_of("int48")
    x = np.asarray(x)
    if x.size and (int(x.min()) < lo or int(x.max()) > hi):
        raise ValueError(f"{op}: {what} (range {int(x.min())}..{int(x.max())} leaves 48 bits [{lo}, {hi}])")


def weighted(op: str, ins: list, attrs: dict) -> tuple[TType, TType, str]:
    """The contract CONV2D and FULLY_CONNECTED share (TOSA 1.0): inputs ``(x, w, b)`` of dtypes int8,
    int8, int32 or int16, int8, int48; ``b`` has ``w.shape[0]`` entries; ``input_zp`` allowed for
    ``x``'s dtype (int16: 0), ``weight_zp`` in the int8 range.  Returns ``(x, w, accumulator dtype)``."""
    n_inputs(op, ins, 3)
    x, w, b = ins
    acc = dtypes.ACC_DTYPE.get(x.dtype)
    need(acc is not None and w.dtype == "int8" and b.dtype == acc, op,
         f"dtypes must be int8, int8, int32 or int16, int8, int48 (got {x.dtype}, {w.dtype}, {b.dtype})")
    need(w.rank >= 1 and b.shape == (w.shape[0],), op, f"bias shape {b.shape} != ({w.shape[0] if w.rank else '?'},)")
    check_zero_point(op, "input_zp", attrs.get("input_zp", 0), x.dtype)
    check_zero_point(op, "weight_zp", attrs.get("weight_zp", 0), "int8")
    return x, w, acc


def window_out(op: str, size: int, k: int, stride: int, pad0: int, pad1: int, dilation: int = 1) -> int:
    """Output length of a window op along one axis (TOSA 1.0): ``(size + pad0 + pad1 - d*(k-1) - 1) // stride + 1``;
    ValueError when it is empty."""
    n = (size + pad0 + pad1 - dilation * (k - 1) - 1) // stride + 1
    need(n >= 1, op, f"empty output along an axis of size {size} (kernel {k}, stride {stride}, pad {pad0}+{pad1})")
    return n


def conv_window(op: str, attrs: dict, x_shape, kh: int, kw: int) -> tuple[int, int]:
    """``(OH, OW)`` of a CONV2D / DEPTHWISE_CONV2D on NHWC ``x_shape`` with a ``kh x kw`` kernel (TOSA 1.0):
    ``pad`` [top, bottom, left, right] >= 0, ``stride`` and ``dilation`` (default 1) >= 1."""
    pt, pb, pl, pr = ints(op, attrs, "pad", 4)
    sy, sx = ints(op, attrs, "stride", 2)
    dy, dx = ints(op, attrs, "dilation", 2) if "dilation" in attrs else (1, 1)
    need(min(pt, pb, pl, pr) >= 0 and min(sy, sx, dy, dx) >= 1, op, "pad >= 0, stride and dilation >= 1")
    return window_out(op, x_shape[1], kh, sy, pt, pb, dy), window_out(op, x_shape[2], kw, sx, pl, pr, dx)


def pool_window(op: str, ins: list, attrs: dict) -> tuple[TType, list[int], list[int], list[int]]:
    """The contract MAX_POOL2D and AVG_POOL2D share (TOSA 1.0): one int8/int16 NHWC input, ``kernel``
    [kh, kw] and ``stride`` [sy, sx] >= 1, ``pad`` [top, bottom, left, right] each in [0, kernel), no
    window entirely in the padding.  Returns ``(output type, kernel, stride, pad)``."""
    n_inputs(op, ins, 1)
    (x,) = ins
    need(x.dtype in ("int8", "int16") and x.rank == 4, op, f"input must be int8/int16 NHWC, got {x.dtype} {x.shape}")
    kh, kw = ints(op, attrs, "kernel", 2)
    sy, sx = ints(op, attrs, "stride", 2)
    pt, pb, pl, pr = ints(op, attrs, "pad", 4)
    need(min(kh, kw, sy, sx) >= 1, op, "kernel and stride must be >= 1")
    need(0 <= pt < kh and 0 <= pb < kh and 0 <= pl < kw and 0 <= pr < kw, op, f"pad {attrs['pad']} must be in [0, kernel)")
    n, h, w, c = x.shape
    oh, ow = window_out(op, h, kh, sy, pt, pb), window_out(op, w, kw, sx, pl, pr)
    need((oh - 1) * sy - pt < h and (ow - 1) * sx - pl < w, op, "a window lies entirely in the padding")
    return TType((n, oh, ow, c), x.dtype), [kh, kw], [sy, sx], [pt, pb, pl, pr]


def broadcast_shape(op: str, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """TOSA 1.0 broadcasting of two shapes: equal ranks (0..6, TOSA's MAX_RANK; two rank-0 scalars have
    equal shapes), and along each axis the sizes are equal or one of them is 1; returns the output shape
    (the larger size per axis)."""
    need(len(a) == len(b), op, f"ranks of {a} and {b} differ (TOSA broadcasts equal ranks; reshape first)")
    need(0 <= len(a) <= 6, op, f"rank {len(a)} outside [0, 6]")
    need(all(x == y or x == 1 or y == 1 for x, y in zip(a, b)), op, f"shapes {a} and {b} do not broadcast")
    return tuple(y if x == 1 else x for x, y in zip(a, b))


def same_shape_int32(op: str, ins: list) -> TType:
    """The contract of INTDIV (and of any int32 binary op without broadcasting): two int32 inputs of
    one shape -> int32.  ADD / SUB / MUL broadcast (:func:`broadcast_int32`)."""
    n_inputs(op, ins, 2)
    a, b = ins
    need(a.dtype == b.dtype == "int32", op, f"dtypes must be int32, int32 (got {a.dtype}, {b.dtype})")
    need(a.shape == b.shape, op, f"shapes {a.shape} and {b.shape} differ (no broadcasting)")
    return TType(a.shape, "int32")


def broadcast_int32(op: str, ins: list) -> TType:
    """The contract of ADD / SUB / MUL: two int32 inputs whose shapes broadcast (:func:`broadcast_shape`)
    -> int32 of the broadcast shape."""
    n_inputs(op, ins, 2)
    a, b = ins
    need(a.dtype == b.dtype == "int32", op, f"dtypes must be int32, int32 (got {a.dtype}, {b.dtype})")
    return TType(broadcast_shape(op, a.shape, b.shape), "int32")


def reduced_shape(op: str, x: TType, attrs: dict) -> tuple[tuple[int, ...], int]:
    """``(output shape, axis)`` of a TOSA 1.0 reduction of ``x`` over ``attrs["axis"]`` (the reduced dim
    becomes 1; the axis must exist and be non-empty)."""
    axis = attrs["axis"]
    need(isinstance(axis, (int, np.integer)) and not isinstance(axis, bool), op, f"axis must be an integer, got {axis!r}")
    need(0 <= int(axis) < x.rank, op, f"axis {axis} outside [0, {x.rank}) for shape {x.shape}")
    need(x.shape[int(axis)] >= 1, op, f"reducing the empty axis {axis} of shape {x.shape}")
    shape = list(x.shape)
    shape[int(axis)] = 1
    return tuple(shape), int(axis)


# ---- the TOSA reader's helpers (``from_tosa`` of the window and weighted ops) ---------------------
def check_tosa_acc_type(r, top, acc_of: dict[str, str]) -> None:
    """A TOSA 1.0 ``acc_type`` attribute must be the accumulator ``acc_of[x dtype]`` the IR uses for the
    operator's input (``r.unsupported`` otherwise, naming the value)."""
    x_dt = r.ir_dtype(top, top.inputs[0], "input")
    want = acc_of.get(x_dt)
    got = top.attrs.get("acc_type")
    if want is None or got != want.upper():
        raise r.unsupported(top, "acc_type", got, f"tabula accumulates {x_dt} inputs in {want or 'no type'}")


def tosa_bias(r, top, i: int, cout: int) -> str:
    """The IR tensor of a TOSA 1.0 bias operand ``i``: ``[cout]`` as it is, or ``[1]`` (one bias for every
    output channel) broadcast to ``[cout]`` when it is a constant."""
    shape = r.tosa_tensor(top.inputs[i])[0]
    if tuple(shape) == (cout,):
        return r.input(top, i)
    if tuple(shape) == (1,) and r.is_const(top.inputs[i]):
        return r.input(top, i, shape=(cout,))
    raise r.unsupported(top, "bias", f"of shape {list(shape)}{'' if r.is_const(top.inputs[i]) else ' (not a constant)'}",
                        f"tabula takes [{cout}], or a constant [1]")


#: The IR's mask: TOSA's ``bool_t`` held as int8 0 / 1 (GREATER / GREATER_EQUAL / EQUAL write it, SELECT
#: reads it; the TOSA export CASTs between the two).
MASK_DTYPE = "int8"


def broadcast_same(op: str, ins: list, allowed: tuple[str, ...]) -> TType:
    """The contract of a broadcasting binary op on one dtype (MAXIMUM, BITWISE_AND, ...): two inputs of
    one dtype in ``allowed`` whose shapes broadcast (:func:`broadcast_shape`) -> that dtype, the
    broadcast shape."""
    n_inputs(op, ins, 2)
    a, b = ins
    need(a.dtype == b.dtype and a.dtype in allowed, op,
         f"dtypes must be one of {'/'.join(allowed)}, both alike (got {a.dtype}, {b.dtype})")
    return TType(broadcast_shape(op, a.shape, b.shape), a.dtype)


def comparison(op: str, ins: list) -> TType:
    """The contract of GREATER / GREATER_EQUAL / EQUAL (TOSA 1.0: int32 only): two int32 inputs whose
    shapes broadcast -> the mask (:data:`MASK_DTYPE`) of the broadcast shape."""
    return TType(broadcast_same(op, ins, ("int32",)).shape, MASK_DTYPE)


def bcast_run(contract: Callable[[list[TType], dict], TType], inputs: list[np.ndarray], attrs: dict, fn) -> np.ndarray:
    """A broadcasting binary reference: the contract checked, ``fn(a, b)`` on int64 copies with NumPy
    broadcasting (equal ranks: TOSA's), the result as the contract's dtype and shape (C-contiguous; rank 0
    stays rank 0, which ``np.ascontiguousarray`` alone makes ``(1,)``)."""
    out = check_arrays(contract, inputs, attrs)
    a, b = (np.asarray(v).astype(np.int64) for v in inputs)
    return np.ascontiguousarray(np.asarray(fn(a, b)).astype(dtypes.get(out.dtype).np)).reshape(out.shape)
