"""IR graph -> TOSA 1.0.0 flatbuffer (tosa-tools' ``serializer.tosa_serializer``) and back through the
TOSA reference model (``tosa_reference_model.run``).

This module is the generic driver: the version header (TOSA 1.0.0, not a draft), the graph inputs
as placeholders (in ``g.inputs`` order), the block outputs (in ``g.outputs`` order), IR constants as
CONST ops (each emitted where it is first used, in the shape that use asks for), and a loop over the
ops that hands each one to its spec's ``tosa(t, op)`` (:mod:`tabula.reference.ops`: every IR op's
TOSA mapping lives in its spec module, beside its contract and reference).  A spec emits its TOSA
op(s) through the :class:`TosaWriter` ``t`` it is given; TOSA 1.0 operands that used to be attributes
(zero points, multipliers, shifts, shapes) are tensors (``CONST``, or ``CONST_SHAPE`` for shapes).

IR ``int48`` (the accumulator of int16 x int8) is TOSA ``INT48``.  The reference model's Python
binding cannot take or return an INT48 tensor: read such a result through the RESCALE that follows
it (as every IR accumulator is), and feed an int48 value as a constant.
"""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import warnings

import numpy as np

from .. import dtypes
from ..errors import IRError, TabulaError
from ..ir import Graph, Op, Tensor

#: The TOSA specification version written into every flatbuffer (major, minor, patch, draft).
TOSA_VERSION = (1, 0, 0, False)


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
    from tosa import NanPropagationMode, ResizeMode, RoundingMode
    from tosa.DType import DType
    from tosa.Op import Op as TosaOp

    return ts, tosa_reference_model, DType, TosaOp, RoundingMode.RoundingMode, NanPropagationMode.NanPropagationMode, \
        ResizeMode.ResizeMode


def supported_ops() -> tuple[str, ...]:
    """Every IR op with a TOSA mapping (its spec's ``tosa``), sorted."""
    from ..reference.ops import specs

    return tuple(sorted(name for name, spec in specs().items() if callable(getattr(spec, "tosa", None))))


class TosaWriter:
    """What a spec's ``tosa(t, op)`` emits through: one TOSA basic block under construction for the
    IR graph :attr:`g`.  TOSA enums are attributes (``t.DType``, ``t.RoundingMode``,
    ``t.NanPropagationMode``, ``t.ResizeMode``); tensors are passed around by their TOSA names (str)."""

    def __init__(self, g: Graph):
        ts, _, DType, TosaOp, RoundingMode, NanPropagationMode, ResizeMode = _modules()
        self.g = g
        self._ts, self._op = ts, TosaOp
        self.DType, self.RoundingMode, self.NanPropagationMode, self.ResizeMode = DType, RoundingMode, NanPropagationMode, ResizeMode
        major, minor, patch, draft = TOSA_VERSION
        self.s = ts.TosaSerializer(".", tosa_version_major=major, tosa_version_minor=minor, tosa_version_patch=patch,
                                   tosa_version_draft=draft)
        self.builder = self.s.builder
        self._names: dict[str, str] = {}  # IR tensor -> TOSA tensor (placeholders, outputs, intermediates)
        self._consts: dict[tuple[str, tuple[int, ...]], str] = {}  # (IR constant, shape) -> its CONST
        self._claimed: set[int] = set()  # ids of ops an earlier op's mapping emitted
        self._users: dict[str, list[Op]] = {}
        for o in g.ops:
            for n in o.inputs:
                self._users.setdefault(n, []).append(o)
        self.source = ""
        self.current: Op | None = None  # the IR op whose mapping is being emitted
        self.made_by: dict[str, str] = {}  # TOSA tensor a mapping added (temp) -> that IR op's first output

    # ---- tensors ----------------------------------------------------------------------------------
    def dtype(self, ir_dtype: str):
        """The TOSA DType of an IR dtype name (int8, int16, int32, int48), or of ``"bool"``: TOSA's
        ``bool_t``, which the IR holds as its int8 mask (a mapping's temporaries between a comparison and
        its CAST, or a CAST and SELECT)."""
        if ir_dtype == "bool":
            return self.DType.BOOL
        d = dtypes.get(ir_dtype).name
        return {"int8": self.DType.INT8, "int16": self.DType.INT16, "int32": self.DType.INT32, "int48": self.DType.INT48}[d]

    def tensor(self, name: str) -> Tensor:
        """The IR tensor ``name``."""
        return self.g.tensors[name]

    def value(self, name: str, shape=None) -> str:
        """The TOSA tensor holding IR tensor ``name``; an IR constant becomes a CONST (once per ``shape``:
        the IR shape unless a mapping reshapes it, e.g. FULLY_CONNECTED's weights as ``[OC, 1, 1, IC]``)."""
        if name in self.g.constants:
            t = self.g.tensors[name]
            shp = tuple(int(d) for d in (t.shape if shape is None else shape))
            key = (name, shp)
            if key not in self._consts:
                self._consts[key] = self.const(self.g.constants[name].reshape(shp), t.dtype)
            return self._consts[key]
        if name not in self._names:
            raise IRError(f"{self.source or 'TOSA'}: tensor {name} is produced by no earlier op")
        return self._names[name]

    def input(self, op: Op, i: int = 0, shape=None) -> str:
        """:meth:`value` of ``op.inputs[i]``."""
        return self.value(op.inputs[i], shape)

    def output(self, op: Op, i: int = 0) -> str:
        """The TOSA tensor ``op.outputs[i]`` is written to (a block output when the IR graph returns it)."""
        n = op.outputs[i]
        if n not in self._names:
            t = self.g.tensors[n]
            self._names[n] = self.s.addIntermediate(list(t.shape), self.dtype(t.dtype)).name
        return self._names[n]

    def temp(self, shape, dtype: str) -> str:
        """A new intermediate TOSA tensor of IR ``dtype``."""
        name = self.s.addIntermediate([int(d) for d in shape], self.dtype(dtype)).name
        if self.current is not None and self.current.outputs:
            self.made_by[name] = self.current.outputs[0]
        return name

    def const(self, values, dtype: str) -> str:
        """A CONST of IR ``dtype`` holding ``values`` (its shape is the array's)."""
        v = np.asarray(values)
        lo, hi = dtypes.range_of(dtype)
        if v.size and (int(v.min()) < lo or int(v.max()) > hi):
            raise IRError(f"{self.source or 'TOSA'}: constant values {v.min()}..{v.max()} do not fit {dtype}")
        return self.s.addConst(list(v.shape), self.dtype(dtype), v.astype(dtypes.get(dtype).np)).name

    def shape(self, values) -> str:
        """A CONST_SHAPE (TOSA 1.0 ``shape_t``) holding ``values``."""
        v = np.asarray([int(x) for x in values], dtype=np.int64)
        return self.s.addConst([v.size], self.DType.SHAPE, v).name

    def zp(self, value: int, dtype: str) -> str:
        """A zero point: a ``[1]`` CONST of the tensor's IR ``dtype`` (TOSA 1.0 takes them as operands)."""
        return self.const(np.array([int(value)]), dtype)

    # ---- operators --------------------------------------------------------------------------------
    def attr(self, kind: str, *args):
        """A serializer attribute: ``kind`` names its ``<kind>Attribute`` builder (``"Conv2d"``, ``"Add"``)."""
        a = self._ts.TosaSerializerAttribute()
        getattr(a, f"{kind}Attribute")(*args)
        return a

    def emit(self, name: str, inputs: list[str], outputs: list[str], attr) -> None:
        """Append TOSA operator ``name`` (``"CONV2D"``) to the block; its location is the IR op's source."""
        self.s.addOperator(getattr(self._op, name), list(inputs), list(outputs), attr, self.source)

    def reshape(self, x: str, shape, dtype: str, out: str | None = None) -> str:
        """RESHAPE ``x`` (IR ``dtype``) to ``shape`` (a CONST_SHAPE operand, TOSA 1.0) into ``out`` or a new
        tensor; returns the result's name."""
        out = out or self.temp(shape, dtype)
        self.emit("RESHAPE", [x, self.shape(shape)], [out], self.attr("Reshape"))
        return out

    def window(self, op: Op, x: str, x_shape, kernel, attrs: dict) -> tuple[str, list[int]]:
        """``(input, pad)`` for a TOSA 1.0 window op (CONV2D, DEPTHWISE_CONV2D, AVG_POOL2D, MAX_POOL2D).
        TOSA wants ``(size + pad_before + pad_after - d*(k-1) - 1) % stride == 0`` on each axis
        (ERROR_IF); the IR, like PyTorch, floors.  The trailing ``r`` rows / columns of the padded input
        that no window reads are dropped: from the bottom / right padding, and where that is too little,
        from the input itself by a SLICE.  Every window and the output stay as they are."""
        pad = [int(v) for v in attrs["pad"]]
        size = [int(v) for v in x_shape]
        cut = [0, 0]
        for axis in range(2):
            d, s_ = int(attrs.get("dilation", (1, 1))[axis]), int(attrs["stride"][axis])
            r = (size[axis + 1] + pad[2 * axis] + pad[2 * axis + 1] - d * (int(kernel[axis]) - 1) - 1) % s_
            cut[axis] = max(0, r - pad[2 * axis + 1])
            pad[2 * axis + 1] = max(0, pad[2 * axis + 1] - r)
        if any(cut):
            sliced = [size[0], size[1] - cut[0], size[2] - cut[1], size[3]]
            dt = self.tensor(op.inputs[0]).dtype
            y = self.temp(sliced, dt)
            self.emit("SLICE", [x, self.shape([0, 0, 0, 0]), self.shape(sliced)], [y], self.attr("Slice"))
            x = y
        return x, pad

    def consumers(self, name: str) -> list[Op]:
        """The IR ops that read tensor ``name``, in graph order."""
        return list(self._users.get(name, []))

    def claim(self, op: Op) -> None:
        """Mark a later IR ``op`` as emitted by the current mapping (the driver then skips it), e.g. the
        RESCALE an int16 FULLY_CONNECTED emits between its CONV2D and its last RESHAPE."""
        self._claimed.add(id(op))

    def claimed(self, op: Op) -> bool:
        """Whether an earlier op's mapping emitted ``op`` (:meth:`claim`)."""
        return id(op) in self._claimed


def serialize(g: Graph, names: dict | None = None) -> bytes:
    """The TOSA 1.0.0 flatbuffer of ``g``: graph inputs become placeholders (in ``g.inputs`` order),
    ``g.outputs`` the block outputs (in that order; an output that is a graph input or a constant goes
    through IDENTITY), IR constants CONST ops, each IR op its spec's mapping (``spec.tosa``).
    ``names``: a dict that receives TOSA tensor name -> IR tensor name for every placeholder, output and
    intermediate, and for the tensors a mapping adds (a FULLY_CONNECTED's RESHAPE / CONV2D results) the
    IR op's output (Vela's per-layer report names TOSA tensors).

    Raises:
        IRError: an op without a TOSA mapping (named, with the ops that have one), or one whose
            attributes TOSA cannot express (named with its source).
        TosaError: tosa-tools is not installed (:func:`unavailable` says why).
    """
    from ..reference.ops import specs

    why = unavailable()
    if why:
        raise TosaError(why)
    table = specs()
    other = sorted({o.op for o in g.ops if not callable(getattr(table.get(o.op), "tosa", None))})
    if other:
        raise IRError(f"no TOSA serialization for IR ops {', '.join(other)} (supported: {', '.join(supported_ops())})")
    t = TosaWriter(g)
    for n in g.inputs:
        x = g.tensors[n]
        t._names[n] = t.s.addPlaceholder(list(x.shape), t.dtype(x.dtype), None).name
    identities = []
    for n in g.outputs:
        y = g.tensors[n]
        out = t.s.addOutput(list(y.shape), t.dtype(y.dtype)).name
        if n in t._names or n in g.constants:  # a graph input (or a constant) returned as it is
            identities.append((n, out))
        else:
            t._names[n] = out
    for n, out in identities:
        t.source = f"output {n}"
        t.emit("IDENTITY", [t.value(n)], [out], t.attr("Identity"))
    for op in g.ops:
        if t.claimed(op):
            continue
        t.source = op.source or ""
        t.current = op
        table[op.op].tosa(t, op)
    if names is not None:
        names.update(t.made_by)
        names.update({v: k for k, v in t._names.items()})
    return bytes(t.s.serialize())


def describe(flatbuffer: bytes) -> dict:
    """What a TOSA flatbuffer holds: ``{"version": (major, minor, patch, draft), "ops": [TOSA operator
    names, in block order]}`` (the main region's first block; CONST and CONST_SHAPE included)."""
    from tosa import TosaGraph

    _, _, _, TosaOp, *_ = _modules()
    names = {v: k for k, v in vars(TosaOp).items() if not k.startswith("_") and isinstance(v, int)}
    tg = TosaGraph.TosaGraph.GetRootAs(flatbuffer, 0)
    v = tg.Version()
    block = tg.Regions(0).Blocks(0)
    return {"version": (v._Major(), v._Minor(), v._Patch(), bool(v._Draft())),
            "ops": [names.get(block.Operators(i).Op(), str(block.Operators(i).Op())) for i in range(block.OperatorsLength())]}


@contextlib.contextmanager
def _captured_stdout():
    """Collect what native code writes to file descriptors 1 and 2 (the reference model's warnings and
    errors) instead of letting it reach the terminal; yields a list that receives the text."""
    text: list[str] = []
    sys.stdout.flush()
    sys.stderr.flush()
    with tempfile.TemporaryFile(mode="w+b") as f:
        saved = [os.dup(1), os.dup(2)]
        try:
            for fd in (1, 2):
                os.dup2(f.fileno(), fd)
            yield text
        finally:
            for fd, old in zip((1, 2), saved):
                os.dup2(old, fd)
                os.close(old)
            f.seek(0)
            text.append(f.read().decode(errors="replace"))


def run(flatbuffer: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Run a TOSA flatbuffer on the official reference model; inputs in placeholder order, outputs in
    block-output order.  Raises :class:`TosaError` when the graph status is not ``TOSA_VALID`` (an
    ERROR_IF or REQUIRE hit), with the reference model's own message."""
    _, trm, *_ = _modules()
    with _captured_stdout() as said:
        # LOW: the reference model says which REQUIRE / ERROR_IF failed (only read when one did)
        outs, status = trm.run(flatbuffer, [np.ascontiguousarray(a) for a in inputs], verbosity="LOW")
    if status != trm.GraphStatus.TOSA_VALID:
        lines = [ln.strip() for ln in "".join(said).splitlines()
                 if ln.strip() and not ln.startswith(("WARNING", "REQUIRE() fails", "Graph result", "An error occurred"))]
        raise TosaError(f"TOSA reference model: {status}" + (f": {' / '.join(lines[:3])}" if lines else ""))
    return [np.asarray(o) for o in outs]


def run_graph(g: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """:func:`serialize` then :func:`run`; outputs in ``g.outputs`` order, reshaped to their IR shapes."""
    outs = run(serialize(g), inputs)
    return [o.reshape(g.tensors[n].shape) for o, n in zip(outs, g.outputs)]
