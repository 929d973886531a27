"""The integer IR: a closed set of TOSA-named ops over named, typed tensors.

A :class:`Graph` is a list of :class:`Op` in execution order over :class:`Tensor` objects.  Layout:
4-D activations are NHWC (the device layout); CONV2D weights are OHWI ``[Cout, KH, KW, Cin]``;
DEPTHWISE_CONV2D weights are TOSA's ``[KH, KW, C, M]`` (their per-channel scales follow the output
channel ``c*M + m``); FULLY_CONNECTED weights are ``[Cout, Cin]``.  Constants (weights, biases, tables) live in
``Graph.constants`` as numpy arrays; the structure is JSON (``ir.json``, :data:`IR_VERSION`) and the
constants ``.npz`` (``ir.npz``).  Dtypes are the records of :mod:`tabula.dtypes` (``int48`` is TOSA's
accumulator of int16 x int8, stored in 64 bits).

The op set is closed and each op is *one spec*: its contract (input/output dtypes and shapes,
attribute ranges; the TOSA 1.0 section it follows) and its integer reference live together in
``tabula/reference/ops/<op>.py``.  :func:`verify` checks every op of a graph against that contract
(:func:`tabula.reference.ops.specs`); :data:`OPS` lists the op names.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import dtypes
from .errors import IRError, LoweringError, MissingFileError
from .reference.ops import TType, specs

__all__ = ["Tensor", "Op", "Graph", "verify", "OPS", "IR_VERSION", "IRError", "LoweringError"]

#: The closed op set: every op with a spec in ``tabula/reference/ops/``.
OPS: tuple[str, ...] = tuple(sorted(specs()))

#: Version written into ``ir.json``.  2: the int16 x int8 accumulator is ``"int48"`` (version 1 said
#: ``"int64"``, read as int48).
IR_VERSION = 2


@dataclass
class Tensor:
    """A named tensor.  ``scale``/``zero_point`` describe its real value as
    ``(q - zero_point) * scale`` (``scale`` is a list for per-channel weights, channel = axis 0).
    ``const`` tensors have their data in :attr:`Graph.constants`."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    scale: float | list[float] | None = None
    zero_point: int = 0
    const: bool = False
    #: (qmin, qmax) of PyTorch's quantize when narrower than the dtype (int16 activations use
    #: [-32767, 32767]; fixed-domain int8 grids [-127, 127]).  Inputs are clamped to it on the host;
    #: inside the program values may use the dtype's full range.
    qrange: tuple[int, int] | None = None

    def __post_init__(self):
        try:  # one name per dtype: "int64" (IR version 1, numpy storage) is int48
            self.dtype = dtypes.get(self.dtype).name
        except KeyError as e:
            raise IRError(f"tensor {self.name!r}: {e.args[0]}") from None

    @property
    def numel(self) -> int:
        """Number of elements."""
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def itemsize(self) -> int:
        """Bytes per element in memory (int48 is stored in 8 bytes)."""
        return dtypes.get(self.dtype).itemsize

    @property
    def np_dtype(self) -> np.dtype:
        """The numpy dtype holding this tensor's values (``int64`` for int48)."""
        return dtypes.get(self.dtype).np

    @property
    def ttype(self) -> TType:
        """``(shape, dtype)``: what an op contract sees of this tensor."""
        return TType(tuple(self.shape), dtypes.get(self.dtype).name)

    @property
    def nbytes(self) -> int:
        """Size in bytes of the tensor's data."""
        return self.numel * self.itemsize


@dataclass
class Op:
    """One IR op: TOSA name, input/output tensor names, attributes; ``source`` names the PyTorch
    node it was lowered from (for error messages and the report)."""

    op: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)
    source: str = ""


@dataclass
class Graph:
    """A whole integer program: tensors, ops in execution order, graph inputs/outputs, constants."""

    tensors: dict[str, Tensor] = field(default_factory=dict)
    ops: list[Op] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    constants: dict[str, np.ndarray] = field(default_factory=dict)
    #: Layout the user-facing inputs/outputs have in PyTorch ("NCHW" for 4-D image tensors); the
    #: host transposes to/from NHWC when it feeds the device.  One entry per input / output name.
    io_layout: dict[str, str] = field(default_factory=dict)

    # --- construction helpers -------------------------------------------------------------
    def add_tensor(self, t: Tensor, data: np.ndarray | None = None) -> Tensor:
        if t.name in self.tensors:
            raise IRError(f"tensor {t.name!r} defined twice")
        self.tensors[t.name] = t
        if data is not None:
            t.const = True
            self.constants[t.name] = np.ascontiguousarray(data, dtype=t.np_dtype)
        return t

    def add_op(self, op: Op) -> Op:
        self.ops.append(op)
        return op

    # --- (de)serialisation ----------------------------------------------------------------
    def to_json(self) -> dict:
        return {
            "version": IR_VERSION,
            "inputs": self.inputs,
            "outputs": self.outputs,
            "io_layout": self.io_layout,
            "tensors": [
                {
                    "name": t.name,
                    "shape": list(t.shape),
                    "dtype": t.dtype,
                    "scale": t.scale,
                    "zero_point": t.zero_point,
                    "const": t.const,
                    "qrange": list(t.qrange) if t.qrange else None,
                }
                for t in self.tensors.values()
            ],
            "ops": [
                {"op": o.op, "inputs": o.inputs, "outputs": o.outputs, "attrs": o.attrs, "source": o.source}
                for o in self.ops
            ],
        }

    def save(self, directory: str | Path) -> None:
        """Write ``ir.json`` (structure) and ``ir.npz`` (constants) into ``directory``.
        Both are written to temporary names first and renamed, so no half-written IR is left."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        tmp_json, tmp_npz = d / "ir.json.tmp", d / "ir.tmp.npz"
        tmp_json.write_text(json.dumps(self.to_json(), indent=1, sort_keys=False) + "\n")
        np.savez(tmp_npz, **self.constants)
        tmp_json.replace(d / "ir.json")
        tmp_npz.replace(d / "ir.npz")

    @classmethod
    def load(cls, directory: str | Path) -> "Graph":
        """Read and :func:`verify` a graph written by :meth:`save`.

        Raises:
            MissingFileError: ``ir.json`` or ``ir.npz`` is missing.
            IRError: an unreadable or malformed ``ir.json`` / ``ir.npz`` (the message names the
                file), an unknown IR version, or a graph that breaks an op contract.
        """
        d = Path(directory)
        for name in ("ir.json", "ir.npz"):
            if not (d / name).is_file():
                raise MissingFileError(f"{d / name} not found: not a saved tabula program directory "
                                       "(tabula quantize or Program.save writes ir.json and ir.npz)")
        try:
            js = json.loads((d / "ir.json").read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise IRError(f"{d / 'ir.json'} is not readable IR JSON: {e}") from None
        try:
            with np.load(d / "ir.npz", allow_pickle=False) as npz:
                consts = {k: npz[k] for k in npz.files}
        except Exception as e:  # zipfile/numpy raise many kinds for a damaged archive
            raise IRError(f"{d / 'ir.npz'} is not a readable .npz archive: {type(e).__name__}: {e}") from None
        try:
            version = js.get("version")
            if version not in (1, IR_VERSION):
                raise IRError(f"{d / 'ir.json'}: IR version {version!r}; this tabula reads versions 1 and {IR_VERSION}")
            g = cls(inputs=list(js["inputs"]), outputs=list(js["outputs"]), io_layout=dict(js.get("io_layout", {})))
            for tj in js["tensors"]:
                qr = tj.get("qrange")
                t = Tensor(tj["name"], tuple(tj["shape"]), dtypes.get(tj["dtype"]).name, tj["scale"], tj["zero_point"],
                           tj["const"], tuple(qr) if qr else None)
                g.tensors[t.name] = t
            g.ops = [Op(o["op"], list(o["inputs"]), list(o["outputs"]), dict(o["attrs"]), o.get("source", ""))
                     for o in js["ops"]]
        except IRError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise IRError(f"{d / 'ir.json'} is malformed ({type(e).__name__}: {e})") from None
        g.constants = consts
        verify(g)
        return g


def verify(g: Graph) -> None:
    """Check the graph against the IR's rules and every op against its contract.

    Checks: each graph input/output and op operand has a tensor; each constant tensor has data of its
    shape and dtype; each op is in :data:`OPS`, has exactly one output, reads only tensors defined
    before it (graph inputs, constants, earlier outputs), and its inputs, attributes and output meet
    the op's contract (``tabula/reference/ops/<op>.py``, TOSA 1.0 semantics).

    Raises:
        IRError: naming the op, its source node and the broken rule.
    """
    ops = specs()
    for n in list(g.inputs) + list(g.outputs):
        if n not in g.tensors:
            raise IRError(f"graph input/output {n!r} has no tensor")
    defined = set(g.inputs) | {n for n, t in g.tensors.items() if t.const}
    for op in g.ops:
        where = f"{op.op} ({op.source or 'no source'})"
        spec = ops.get(op.op)
        if spec is None:
            raise IRError(f"{where}: unknown IR op; the IR has {', '.join(OPS)}")
        if len(op.outputs) != 1:
            raise IRError(f"{where}: must have exactly one output")
        for n in list(op.inputs) + list(op.outputs):
            if n not in g.tensors:
                raise IRError(f"{where}: tensor {n!r} is not defined in the graph")
        for n in op.inputs:
            if n not in defined:
                raise IRError(f"{where}: input {n!r} used before it is defined")
        out = g.tensors[op.outputs[0]]
        try:
            want = spec.contract([g.tensors[n].ttype for n in op.inputs], {**op.attrs, "output_dtype": out.ttype.dtype})
        except (ValueError, KeyError, TypeError, IndexError) as e:
            msg = str(e).removeprefix(f"{op.op}: ")
            if isinstance(e, KeyError):
                msg = f"missing attribute {e.args[0]!r}"
            raise IRError(f"{where}: {msg}") from None
        if want != out.ttype:
            raise IRError(f"{where}: output {out.name!r} is {out.ttype.dtype} {out.ttype.shape}; the op gives "
                          f"{want.dtype} {want.shape}")
        defined.update(op.outputs)
    for n in g.outputs:
        if n not in defined:
            raise IRError(f"graph output {n!r} is never produced")
    for name, t in g.tensors.items():
        if t.const:
            if name not in g.constants:
                raise IRError(f"constant tensor {name!r} has no data in the constants (ir.npz)")
            data = g.constants[name]
            if tuple(data.shape) != tuple(t.shape) or data.dtype != t.np_dtype:
                raise IRError(f"constant {name!r}: data {data.dtype} {tuple(data.shape)} does not match its tensor "
                              f"{t.dtype} {tuple(t.shape)}")
