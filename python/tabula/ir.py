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

__all__ = ["Tensor", "Op", "Graph", "verify", "check_tensor", "OPS", "IR_VERSION", "IRError", "LoweringError"]

#: The closed op set: every op with a spec in ``tabula/reference/ops/``.
OPS: tuple[str, ...] = tuple(sorted(specs()))

#: Version written into ``ir.json``.  2: the int16 x int8 accumulator is ``"int48"`` (version 1 said
#: ``"int64"``, read as int48).
IR_VERSION = 2

#: The fix every error about a damaged or edited IR file names.
REGENERATE = "the IR files were edited or damaged: regenerate ir.json and ir.npz with tabula quantize (or scons)"


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
        Both are written to temporary names first and renamed, so no half-written IR is left
        (StageError naming the file when the disk is full: :func:`tabula.files.write_atomic`)."""
        from .files import write_atomic

        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.to_json(), indent=1, sort_keys=False) + "\n"
        write_atomic(d / "ir.npz", lambda tmp: np.savez(tmp, **self.constants))
        write_atomic(d / "ir.json", text)

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
                raise IRError(f"{d / 'ir.json'}: IR version {version!r}; this tabula reads versions 1 and "
                              f"{IR_VERSION}: regenerate the IR with this tabula (tabula quantize or scons)")
            g = cls(inputs=list(js["inputs"]), outputs=list(js["outputs"]), io_layout=dict(js.get("io_layout", {})))
            for tj in js["tensors"]:
                qr = tj.get("qrange")
                t = Tensor(tj["name"], tuple(tj["shape"]), dtypes.get(tj["dtype"]).name, tj["scale"], tj["zero_point"],
                           tj["const"], tuple(qr) if qr else None)
                if t.name in g.tensors:
                    raise IRError(f"{d / 'ir.json'}: tensor {t.name!r} is defined twice; {REGENERATE}")
                g.tensors[t.name] = t
            g.ops = [Op(o["op"], list(o["inputs"]), list(o["outputs"]), dict(o["attrs"]), o.get("source", ""))
                     for o in js["ops"]]
        except IRError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise IRError(f"{d / 'ir.json'} is malformed ({type(e).__name__}: {e}); {REGENERATE}") from None
        g.constants = consts
        for name in consts:
            t = g.tensors.get(name)
            if t is None or not t.const:
                raise IRError(f"{d / 'ir.npz'} holds {name!r}, which ir.json does not declare as a constant tensor: "
                              f"the two files do not belong together; {REGENERATE}")
        try:
            verify(g)
        except IRError as e:
            raise IRError(f"{d}: {e}; {REGENERATE}") from None
        return g


def verify(g: Graph) -> None:
    """Check the graph against the IR's rules and every op against its contract.

    Checks: the graph has inputs and outputs, each with a tensor; every tensor's shape, scales, zero
    point and qrange (:func:`check_tensor`); ``io_layout`` names only graph inputs/outputs, each
    ``"NCHW"`` (4-D) or ``"plain"``; each constant tensor has data of its shape and dtype, and
    every constant's data has a constant tensor; each op is in :data:`OPS`, has exactly one output,
    reads only tensors defined before it (graph inputs, constants, earlier outputs), and its inputs,
    attributes and output meet the op's contract (``tabula/reference/ops/<op>.py``, TOSA 1.0 semantics); no RESCALE multiplier is
    0.  :meth:`Graph.load` (so :func:`tabula.load`), :class:`tabula.Program` (so ``run``) and
    :func:`tabula.codegen.generate` call it: no stage trusts an IR it did not check.

    Raises:
        IRError: naming the op (and its source node) or tensor, and the broken rule.
    """
    ops = specs()
    if not g.inputs or not g.outputs:
        raise IRError(f"the graph has {len(g.inputs)} input(s) and {len(g.outputs)} output(s); it needs at least one of each")
    for n in list(g.inputs) + list(g.outputs):
        if n not in g.tensors:
            raise IRError(f"graph input/output {n!r} has no tensor")
    depthwise = {o.inputs[1] for o in g.ops if o.op == "DEPTHWISE_CONV2D" and len(o.inputs) > 1}
    for name, t in g.tensors.items():
        check_tensor(t, io=name in g.inputs or name in g.outputs, depthwise=name in depthwise)
    for name, layout in g.io_layout.items():
        if name not in g.inputs and name not in g.outputs:
            raise IRError(f"io_layout names {name!r}, which is not a graph input or output")
        if layout not in ("NCHW", "plain") or (layout == "NCHW" and len(g.tensors[name].shape) != 4):
            raise IRError(f"io_layout of {name!r} is {layout!r}; it must be 'NCHW' (4-D tensors) or 'plain'")
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
        if op.op == "RESCALE" and any(int(m) == 0 for m in op.attrs.get("multiplier", [])):
            raise IRError(f"{where}: multiplier {op.attrs['multiplier']} has a 0: every value would become the "
                          "output zero point (tabula's multipliers come from frexp, in [2^30, 2^31))")
        if want != out.ttype:
            raise IRError(f"{where}: output {out.name!r} is {out.ttype.dtype} {out.ttype.shape}; the op gives "
                          f"{want.dtype} {want.shape}")
        defined.update(op.outputs)
    for n in g.outputs:
        if n not in defined:
            raise IRError(f"graph output {n!r} is never produced")
    for name in g.constants:
        if name not in g.tensors or not g.tensors[name].const:
            raise IRError(f"constant data {name!r} has no constant tensor in the graph")
    for name, t in g.tensors.items():
        if t.const:
            if name not in g.constants:
                raise IRError(f"constant tensor {name!r} has no data in the constants (ir.npz)")
            data = np.asarray(g.constants[name])
            if tuple(data.shape) != tuple(t.shape) or data.dtype != t.np_dtype:
                raise IRError(f"constant {name!r}: data {data.dtype} {tuple(data.shape)} does not match its tensor "
                              f"{t.dtype} {tuple(t.shape)}")


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def check_tensor(t: Tensor, io: bool = False, depthwise: bool = False) -> None:
    """Check one tensor's type and quantization parameters against the IR's rules.

    ``shape``: integers >= 1.  ``scale``: None (tables, integer intermediates), a finite float > 0, or
    a list of them: one per channel, the channel being axis 0 (weights, bias) or the last axis
    (accumulators); a DEPTHWISE_CONV2D weight (``depthwise``, ``[KH, KW, C, M]``) has C*M.  A graph
    input or output (``io``) has one scale or none (an integer-only program: ``Program.run_int``
    only).  ``zero_point``: an integer its dtype may carry (:func:`tabula.dtypes.zero_point_range`:
    any int8 value for int8, 0 for the wider types).  ``qrange``: None or ``(lo, hi)`` integers with
    ``lo <= hi`` inside the dtype.

    Raises:
        IRError: naming the tensor and the broken rule.
    """
    what = f"tensor {t.name!r}"
    if not all(_is_int(d) and d >= 1 for d in t.shape):
        raise IRError(f"{what}: shape {tuple(t.shape)} must be integers >= 1")
    scales = t.scale if isinstance(t.scale, (list, tuple)) else [t.scale]
    if t.scale is not None:
        bad = [s for s in scales if isinstance(s, bool) or not isinstance(s, (int, float, np.floating, np.integer))
               or not np.isfinite(s) or s <= 0]
        if bad or not scales:
            raise IRError(f"{what}: scale {t.scale!r} must be finite and > 0")
    if isinstance(t.scale, (list, tuple)):
        if io:
            raise IRError(f"{what}: a graph input/output needs one scale (a number), not a list {t.scale!r}")
        shape = tuple(t.shape) or (1,)
        counts = {1, shape[-1] * shape[-2]} if depthwise and len(shape) > 1 else {1, shape[0], shape[-1]}
        if len(t.scale) not in counts:
            raise IRError(f"{what}: {len(t.scale)} per-channel scales for shape {tuple(t.shape)} (one per channel: "
                          "axis 0 for weights and bias, the last axis for accumulators, C*M for depthwise "
                          "weights [KH, KW, C, M])")
    lo, hi = dtypes.zero_point_range(t.dtype)
    if not _is_int(t.zero_point) or not lo <= t.zero_point <= hi:
        rule = f"in [{lo}, {hi}]" if lo != hi else "0 (TOSA 1.0: only int8 tensors are affine)"
        raise IRError(f"{what}: {t.dtype} zero point {t.zero_point!r} must be an integer {rule}")
    if t.qrange is not None:
        dlo, dhi = dtypes.range_of(t.dtype)
        if (len(t.qrange) != 2 or not all(_is_int(v) for v in t.qrange)
                or not dlo <= t.qrange[0] <= t.qrange[1] <= dhi):
            raise IRError(f"{what}: qrange {tuple(t.qrange)} must be (lo, hi) integers with "
                          f"{dlo} <= lo <= hi <= {dhi} ({t.dtype})")
