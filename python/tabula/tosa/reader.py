"""TOSA 1.0 flatbuffer -> IR graph: the inverse of :func:`tabula.tosa.serialize`.

This module is the generic driver, as :mod:`tabula.tosa.flatbuffer` is for the export: it parses the
flatbuffer (tosa-tools' generated ``tosa`` classes), checks the version (TOSA 1.0.x) and that there is
one region with one basic block (no control flow), makes the block inputs the graph inputs and the block
outputs the graph outputs (in block order), keeps ``CONST`` / ``CONST_SHAPE`` values aside, reads
``IDENTITY`` as an alias and ``CAST`` between ``BOOL`` and the IR's int8 mask as one
(:meth:`TosaReader.cast`), and hands every other operator to the spec whose ``OP`` it names
(:mod:`tabula.reference.ops`: ``from_tosa(r, top)``, beside that op's ``tosa``).  A spec reads its
operator through the :class:`TosaReader` ``r``: TOSA 1.0 operands that are IR attributes (zero points,
multipliers, shifts, shapes) must be constants and become attributes; the others become IR tensors
(an IR constant for a ``CONST``).  Last, every spec's ``fold_tosa(g)`` (FULLY_CONNECTED: the RESHAPE,
CONV2D 1x1, RESHAPE its export writes) turns an op's expansion back into the op, and the graph is checked
with :func:`tabula.ir.verify`.

TOSA's ``BOOL`` is the IR's mask (int8 0 / 1, :data:`MASK_DTYPE`) where a spec reads or writes one -- a
comparison's output, SELECT's condition (``mask=True`` of :meth:`TosaReader.input` and
:meth:`TosaReader.emit`); elsewhere a ``BOOL`` operand is unsupported.

What tabula does not implement -- an operator without a spec, a dtype outside int8/int16/int32/int48,
an attribute value such as RESCALE's ``DOUBLE_ROUND`` or unsigned types, a variant outside an op's
contract -- raises :class:`Unsupported`: one line naming the operator, the attribute and its value,
never a guess.
"""
from __future__ import annotations

import importlib
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import dtypes
from ..errors import IRError, MissingFileError, TabulaError
from ..ir import Graph, Op, Tensor, verify
from ..reference._checks import MASK_DTYPE  # the IR dtype of a TOSA BOOL read as the mask (0 / 1)

#: TOSA DType name -> IR dtype name (the types the IR holds; BOOL only as the mask where a spec says so, INT4,
#: floats and the rest are unsupported).
IR_DTYPES = {"INT8": "int8", "INT16": "int16", "INT32": "int32", "INT48": "int48"}

#: Attribute fields whose value is a TOSA enum: field -> enum module of the ``tosa`` package.
_ENUM_FIELDS = {"AccType": "DType", "RoundingMode": "RoundingMode", "Mode": "ResizeMode", "NanMode": "NanPropagationMode"}


class Unsupported(TabulaError, ValueError):
    """A TOSA graph uses what tabula does not implement: ``op`` (the TOSA operator), ``attribute`` (the
    attribute, operand or fact) and ``value`` (what it is), and ``why`` (what tabula has instead).
    ``str()`` is one line."""

    def __init__(self, op: str, attribute: str, value, why: str = ""):
        self.op, self.attribute, self.value, self.why = op, attribute, value, why
        text = f"{op}: {attribute} {value} is not supported" if attribute else f"{op}: {value}"
        super().__init__(text + (f" ({why})" if why else ""))


@dataclass
class TosaOperator:
    """One TOSA operator as a spec's ``from_tosa`` sees it: ``op`` (the TOSA name, e.g. ``"CONV2D"``),
    ``inputs`` / ``outputs`` (TOSA tensor names), ``attrs`` (its attribute table as a dict: snake_case
    field names, vectors as lists of ints, enums by name, e.g. ``{"pad": [0, 0, 1, 1], "acc_type": "INT32"}``)
    and ``source`` (its location text, or ``"TOSA operator <index>"``)."""

    op: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict = field(default_factory=dict)
    source: str = ""


@dataclass
class _Tensor:
    shape: tuple[int, ...]
    dtype: str  # the TOSA DType name
    data: np.ndarray | None  # uint8 bytes of a tensor with data (a CONST's)


def unavailable() -> str | None:
    """None when the ``tosa`` flatbuffer classes of tosa-tools import, else the exact reason."""
    try:
        importlib.import_module("tosa.TosaGraph")
    except Exception as e:  # noqa: BLE001 - any import failure is the reason we report
        return f"tosa-tools is not usable here: {type(e).__name__}: {e} (pip install tosa-tools)"
    return None


def _enum_names(module: str) -> dict[int, str]:
    cls = getattr(importlib.import_module(f"tosa.{module}"), module)
    return {v: k for k, v in vars(cls).items() if not k.startswith("_") and isinstance(v, int)}


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _decode(values: np.ndarray, dtype: str, shape: tuple[int, ...], what: str) -> np.ndarray:
    """The values of a TOSA tensor's data bytes (little endian; INT48 in 6 bytes, SHAPE in 8)."""
    raw = np.asarray(values, dtype=np.uint8)
    n = int(np.prod(shape, dtype=np.int64))
    if dtype == "INT48":
        b = raw.reshape(-1, 6).astype(np.int64)
        v = sum(b[:, i] << (8 * i) for i in range(6))
        out = np.where(v >= 1 << 47, v - (1 << 48), v)
    elif dtype in ("INT8", "INT16", "INT32", "SHAPE", "INT64"):
        np_t = {"INT8": "<i1", "INT16": "<i2", "INT32": "<i4", "SHAPE": "<i8", "INT64": "<i8"}[dtype]
        out = raw.view(np_t).astype(np.int64)
    elif dtype == "BOOL":
        out = raw.astype(np.int64)
    else:
        raise Unsupported("CONST", f"{what} dtype", dtype, "the IR holds int8, int16, int32 and int48")
    if out.size != n:
        raise IRError(f"TOSA tensor {what}: {out.size} values for shape {list(shape)}")
    return out.reshape(shape)


class TosaReader:
    """What a spec's ``from_tosa(r, top)`` reads through: the TOSA block being read into the IR graph
    :attr:`g`.  TOSA tensors are named by their TOSA names; IR tensors by the names :meth:`input` and
    :meth:`emit` return."""

    def __init__(self, flatbuffer: bytes):
        why = unavailable()
        if why:
            from .flatbuffer import TosaError

            raise TosaError(why)
        from tosa import TosaGraph

        try:
            tg = TosaGraph.TosaGraph.GetRootAs(bytearray(flatbuffer), 0)
            version = tg.Version()
            self.version = (version._Major(), version._Minor(), version._Patch(), bool(version._Draft()))
            n_regions = tg.RegionsLength()
            region = tg.Regions(0) if n_regions else None
            n_blocks = region.BlocksLength() if region is not None else 0
        except Exception as e:  # noqa: BLE001 - a damaged buffer raises anything from struct to IndexError
            raise IRError(f"not a TOSA flatbuffer ({type(e).__name__}: {e})") from None
        if self.version[:2] != (1, 0):
            raise Unsupported("graph", "TOSA version", ".".join(map(str, self.version[:3])), "tabula reads TOSA 1.0")
        if n_regions != 1 or n_blocks != 1:
            raise Unsupported("graph", "regions / blocks", f"{n_regions} / {n_blocks}",
                              "tabula reads one region of one basic block (no control flow)")
        self._block = region.Blocks(0)
        self._dtypes = _enum_names("DType")
        self._ops = _enum_names("Op")
        self._attr_kinds = _enum_names("Attribute")
        self._enums = {f: _enum_names(m) for f, m in _ENUM_FIELDS.items()}
        self.g = Graph()
        self._tensors: dict[str, _Tensor] = {}
        b = self._block
        for i in range(b.TensorsLength()):
            t = b.Tensors(i)
            shape = () if t.ShapeIsNone() else tuple(int(d) for d in t.ShapeAsNumpy())
            data = None if t.DataIsNone() else t.DataAsNumpy()
            self._tensors[t.Name().decode()] = _Tensor(shape, self._dtypes.get(t.Type(), str(t.Type())), data)
        for i in range(b.ShapesLength()):
            s = b.Shapes(i)
            data = None if s.DataIsNone() else s.DataAsNumpy()[:8 * int(s.Rank())]  # a rank-0 shape may hold padding
            self._tensors[s.Name().decode()] = _Tensor((int(s.Rank()),), "SHAPE", data)
        #: the block's input and output TOSA tensor names, in block order (graph inputs / outputs follow them)
        self.block_inputs = [b.Inputs(i).decode() for i in range(b.InputsLength())]
        self.block_outputs = [b.Outputs(i).decode() for i in range(b.OutputsLength())]
        self._consts: dict[str, np.ndarray] = {}  # TOSA CONST / CONST_SHAPE -> values (int64)
        self._ir: dict[str, str] = {}  # TOSA tensor -> IR tensor
        self._ir_consts: dict[tuple[str, tuple[int, ...]], str] = {}
        self._used: set[str] = set()
        self._masks: set[str] = set()  # IR tensors holding a TOSA BOOL as the mask (0 / 1 by construction)
        self._readers: dict[str, list[tuple[str, int]]] = {}  # TOSA tensor -> (operator, operand index) reading it

    # ---- names and types ------------------------------------------------------------------------
    def _new_name(self, tosa_name: str) -> str:
        base = re.sub(r"\W", "_", tosa_name) or "t"
        if base[0].isdigit():
            base = "t_" + base
        name, k = base, 1
        while name in self._used:
            k += 1
            name = f"{base}_{k}"
        self._used.add(name)
        return name

    def tosa_tensor(self, name: str) -> tuple[tuple[int, ...], str]:
        """``(shape, TOSA dtype name)`` of TOSA tensor ``name``."""
        if name not in self._tensors:
            raise IRError(f"TOSA tensor {name!r} is not declared in the block")
        t = self._tensors[name]
        return t.shape, t.dtype

    def ir_dtype(self, top: TosaOperator, name: str, what: str = "", mask: bool = False) -> str:
        """The IR dtype of TOSA tensor ``name`` (an operand of ``top``); ``mask``: a BOOL is the IR's int8 mask
        (:data:`MASK_DTYPE`).  :class:`Unsupported` for a type the IR does not hold (BOOL elsewhere, INT4,
        floats, ...)."""
        dt = self.tosa_tensor(name)[1]
        if dt == "BOOL" and mask:
            return MASK_DTYPE
        if dt not in IR_DTYPES:
            why = ("the IR holds bool only as the int8 mask of a comparison's output and SELECT's condition" if dt == "BOOL"
                   else "the IR holds int8, int16, int32 and int48")
            raise Unsupported(top.op, f"{what or name} dtype", dt, why)
        return IR_DTYPES[dt]

    def unsupported(self, top: TosaOperator, attribute: str, value, why: str = "") -> Unsupported:
        """The :class:`Unsupported` for ``top`` (to ``raise``): ``attribute`` has ``value``; ``why`` says what
        tabula implements instead."""
        return Unsupported(top.op, attribute, value, why)

    # ---- operands -------------------------------------------------------------------------------
    def is_const(self, name: str) -> bool:
        """Whether TOSA tensor ``name`` is the output of a CONST or CONST_SHAPE read so far."""
        return name in self._consts

    def const(self, top: TosaOperator, i: int, what: str) -> np.ndarray:
        """The values (int64) of operand ``i`` of ``top``, which must be a CONST / CONST_SHAPE
        (:class:`Unsupported` naming ``what`` otherwise: tabula's IR holds it as an attribute)."""
        name = top.inputs[i]
        if name not in self._consts:
            raise Unsupported(top.op, what, "from a non-constant tensor", "tabula needs it constant: it is an IR attribute")
        return self._consts[name]

    def scalar(self, top: TosaOperator, i: int, what: str) -> int:
        """The one value of a ``[1]`` constant operand (a TOSA 1.0 zero point, MUL's shift)."""
        v = self.const(top, i, what)
        if v.size != 1:
            raise Unsupported(top.op, what, f"of shape {list(v.shape)}", "one value expected")
        return int(v.reshape(-1)[0])

    def shape(self, top: TosaOperator, i: int, what: str) -> list[int]:
        """The values of a CONST_SHAPE operand (TOSA 1.0 ``shape_t``: SLICE's start, TILE's multiples, ...)."""
        return [int(v) for v in self.const(top, i, what).reshape(-1)]

    def input(self, top: TosaOperator, i: int, shape=None, mask: bool = False) -> str:
        """The IR tensor of operand ``i`` of ``top``: a constant becomes an IR constant (once per ``shape``:
        its own unless given, e.g. a ``[1]`` bias broadcast to ``[Cout]``); any other tensor must have been
        produced already (a graph input or an earlier operator's output).  ``mask``: the operand may be a
        BOOL, read as the IR's int8 mask (SELECT's condition)."""
        name = top.inputs[i]
        if name in self._consts:
            dt = self.ir_dtype(top, name, mask=mask)
            values = self._consts[name]
            shp = tuple(int(d) for d in (values.shape if shape is None else shape))
            key = (name, shp)
            if key not in self._ir_consts:
                ir_name = self._new_name(name if shape is None else f"{name}_{'x'.join(map(str, shp))}")
                data = np.broadcast_to(values, shp) if shape is not None else values
                self.g.add_tensor(Tensor(ir_name, shp, dt), np.ascontiguousarray(data).astype(dtypes.get(dt).np))
                self._ir_consts[key] = ir_name
                if self.tosa_tensor(name)[1] == "BOOL":
                    self._masks.add(ir_name)
            return self._ir_consts[key]
        if name not in self._ir:
            raise IRError(f"{top.op} ({top.source}): operand {name!r} is produced by no earlier operator")
        self.ir_dtype(top, name, mask=mask)
        return self._ir[name]

    # ---- emitting -------------------------------------------------------------------------------
    def emit(self, op: str, top: TosaOperator, inputs: list[str], attrs: dict | None = None, out: int = 0,
             shape=None, mask: bool = False) -> Op:
        """Append IR op ``op`` reading IR tensors ``inputs`` with ``attrs``; its output is TOSA output
        ``out`` of ``top`` (that tensor's shape and dtype) or, given ``shape``, a new intermediate IR tensor of
        that shape and the output's dtype (a mapping of one TOSA operator to several IR ops, e.g. RESIZE then
        SLICE).  ``mask``: the output may be a BOOL, written as the IR's int8 mask (a comparison).  The op's
        contract is checked here: a ValueError of the spec becomes :class:`Unsupported` (the variant is outside
        tabula's contract), and an output type the contract does not give is an IRError."""
        from ..reference.ops import specs

        attrs = dict(attrs or {})
        tosa_out = top.outputs[out]
        dt = self.ir_dtype(top, tosa_out, "output", mask=mask)
        bound = shape is None  # the TOSA output itself, or an intermediate of the mapping
        shape = tuple(self.tosa_tensor(tosa_out)[0] if bound else (int(d) for d in shape))
        spec = specs()[op]
        ins = [self.g.tensors[n].ttype for n in inputs]
        try:
            want = spec.contract(ins, {**attrs, "output_dtype": dt})
        except (ValueError, KeyError, TypeError, IndexError) as e:
            raise Unsupported(top.op, "", f"outside tabula's {op} contract: {str(e).removeprefix(op + ': ')}") from None
        if tuple(want.shape) != shape or want.dtype != dt:
            raise IRError(f"{top.op} ({top.source}): output {tosa_out!r} is {dt} {list(shape)}; {op} gives "
                          f"{want.dtype} {list(want.shape)}")
        name = self._new_name(tosa_out if bound else f"{tosa_out}_{op.lower()}")
        self.g.add_tensor(Tensor(name, shape, dt))
        if bound:
            self._ir[tosa_out] = name
            if self.tosa_tensor(tosa_out)[1] == "BOOL":
                self._masks.add(name)
        return self.g.add_op(Op(op, list(inputs), [name], attrs, top.source))

    def alias(self, tosa_name: str, ir_name: str) -> None:
        """Make TOSA tensor ``tosa_name`` stand for IR tensor ``ir_name`` (IDENTITY)."""
        self._ir[tosa_name] = ir_name

    def cast(self, top: TosaOperator) -> None:
        """TOSA 1.0 CAST where it is the IR's mask already, an alias: BOOL -> INT8 (the mask's codes are the
        bool's 0 / 1), and INT8 -> BOOL of a mask (what the export writes before SELECT) or of a tensor only
        SELECT conditions read (SELECT takes any non-zero code as true, as CAST does).  Every other CAST is
        :class:`Unsupported`: tabula has no CAST op."""
        (x,), (y,) = top.inputs, top.outputs
        src, dst = self.tosa_tensor(x)[1], self.tosa_tensor(y)[1]
        if (src, dst) == ("BOOL", "INT8"):
            self.alias(y, self.input(top, 0, mask=True))
            return
        if (src, dst) == ("INT8", "BOOL"):
            ir = self.input(top, 0)
            readers = self._readers.get(y, [])
            if ir in self._masks or (readers and y not in self.block_outputs
                                     and all(op == "SELECT" and i == 0 for op, i in readers)):
                self.alias(y, ir)
                return
            raise Unsupported(top.op, "", "INT8 -> BOOL of a tensor that is not a mask",
                              "tabula reads it where a comparison wrote the int8, or where only SELECT conditions read the bool")
        raise Unsupported(top.op, "", f"{src} -> {dst}", "tabula reads CAST only between BOOL and its int8 mask")

    # ---- the block ------------------------------------------------------------------------------
    def _attrs(self, o, kind: str) -> dict:
        if kind == "NONE" or o.Attribute() is None:
            return {}
        cls = getattr(importlib.import_module(f"tosa.{kind}"), kind)
        a = cls()
        tab = o.Attribute()
        a.Init(tab.Bytes, tab.Pos)
        out = {}
        for f in dir(cls):
            if not f[:1].isupper() or f.startswith(("GetRootAs", "Init")) or f.endswith(("AsNumpy", "Length", "IsNone")) \
                    or "BufferHasIdentifier" in f:
                continue
            if hasattr(cls, f + "AsNumpy"):
                out[_snake(f)] = [] if getattr(a, f + "IsNone")() else [int(v) for v in getattr(a, f + "AsNumpy")()]
            else:
                v = getattr(a, f)()
                if f in self._enums:
                    v = self._enums[f].get(v, str(v))
                elif isinstance(v, bytes):
                    v = v.decode(errors="replace")
                out[_snake(f)] = v
        return out

    def operators(self):
        """The block's operators in order, as :class:`TosaOperator`."""
        b = self._block
        for i in range(b.OperatorsLength()):
            o = b.Operators(i)
            name = self._ops.get(o.Op(), f"operator {o.Op()}")
            kind = self._attr_kinds.get(o.AttributeType(), "NONE")
            loc = o.Location()
            text = loc.Text().decode(errors="replace") if loc is not None and loc.Text() else ""
            yield TosaOperator(name, [o.Inputs(j).decode() for j in range(o.InputsLength())],
                               [o.Outputs(j).decode() for j in range(o.OutputsLength())], self._attrs(o, kind),
                               text or f"TOSA operator {i} ({name})")

    def read(self) -> Graph:
        """The whole block as an IR graph (see the module docstring); the graph is verified."""
        from ..reference.ops import specs

        table = specs()
        readers = {name: s for name, s in table.items() if callable(getattr(s, "from_tosa", None))}
        g = self.g
        tops = list(self.operators())
        for top in tops:
            for i, n in enumerate(top.inputs):
                self._readers.setdefault(n, []).append((top.op, i))
        for n in self.block_inputs:
            shape, tdt = self.tosa_tensor(n)
            dt = self.ir_dtype(TosaOperator("graph input", [], []), n, n, mask=True)  # a BOOL: the reading op decides
            ir_name = self._new_name(n)
            g.add_tensor(Tensor(ir_name, tuple(shape), dt))
            g.inputs.append(ir_name)
            self._ir[n] = ir_name
            if tdt == "BOOL":
                self._masks.add(ir_name)
        for top in tops:
            if top.op in ("CONST", "CONST_SHAPE"):
                (out,) = top.outputs
                shape, dt = self.tosa_tensor(out)
                t = self._tensors[out]
                if t.data is None:
                    raise Unsupported(top.op, "data", f"of {out} absent", "tabula reads constants stored in the flatbuffer")
                self._consts[out] = _decode(t.data, dt, shape, out)
            elif top.op == "IDENTITY":
                self.alias(top.outputs[0], self.input(top, 0, mask=self.tosa_tensor(top.inputs[0])[1] == "BOOL"))
            elif top.op == "CAST":
                self.cast(top)
            elif top.op in readers:
                readers[top.op].from_tosa(self, top)
            else:
                raise Unsupported(top.op, "", "tabula has no such op", f"it reads {', '.join(supported_tosa_ops())}")
        for n in self.block_outputs:
            if n in self._consts:
                g.outputs.append(self.input(TosaOperator("graph output", [n], []), 0))
            elif n in self._ir:
                g.outputs.append(self._ir[n])
            else:
                raise IRError(f"TOSA block output {n!r} is produced by no operator")
        for spec in table.values():
            fold = getattr(spec, "fold_tosa", None)
            if callable(fold):
                fold(g)
        verify(g)
        return g


def supported_tosa_ops() -> tuple[str, ...]:
    """The TOSA operators the reader maps to IR ops (each spec with a ``from_tosa``), sorted; CONST,
    CONST_SHAPE and IDENTITY are read by the driver itself."""
    from ..reference.ops import specs

    return tuple(sorted(name for name, s in specs().items() if callable(getattr(s, "from_tosa", None))))


def read(flatbuffer: bytes) -> Graph:
    """The IR graph of a TOSA 1.0 flatbuffer (the inverse of :func:`tabula.tosa.serialize`): block
    inputs -> graph inputs, block outputs -> graph outputs (both in block order), each operator through
    its spec's ``from_tosa`` (then the specs' ``fold_tosa``), tensors named after their TOSA names
    (``input-0`` -> ``input_0``).  Shapes and dtypes are TOSA's (NHWC activations, OHWI CONV2D weights,
    ``[KH, KW, C, M]`` depthwise weights); tensors carry no scales.

    Raises:
        Unsupported: an operator, dtype, attribute value or variant tabula does not implement (one line:
            operator, attribute, value).
        IRError: a damaged flatbuffer, or a graph whose types contradict the operators' contracts.
        TosaError: tosa-tools is not installed.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return TosaReader(flatbuffer).read()


def read_file(path: str | Path) -> Graph:
    """:func:`read` of a ``.tosa`` file; MissingFileError when it does not exist."""
    p = Path(path)
    if not p.is_file():
        raise MissingFileError(f"{p} not found: a TOSA flatbuffer (.tosa) was expected")
    return read(p.read_bytes())
