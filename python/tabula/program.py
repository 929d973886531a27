"""``tabula.Program``: a lowered integer program with float and integer entry points."""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np

from .errors import IRError, QuantizationError
from .ir import Graph, verify
from .qmath import dequantize, quantize_round_half_even


class QParams(NamedTuple):
    """Quantization parameters of one model input/output: ``real = (q - zero_point) * scale``."""

    scale: float
    zero_point: int
    dtype: str


class Program:
    """An integer program (IR :class:`~tabula.ir.Graph`) and the float interface around it.

    Float tensors use PyTorch's layout (NCHW for 4-D images); integer tensors use the device
    layout (NHWC for 4-D).  :meth:`run` does both conversions.
    """

    def __init__(self, graph: Graph):
        verify(graph)
        self.graph = graph

    # -- interface ------------------------------------------------------------------------
    @property
    def input_qparams(self) -> list[QParams]:
        """One ``(scale, zero_point, dtype)`` per model input, as the integer program uses it."""
        return [self._qp(n) for n in self.graph.inputs]

    @property
    def output_qparams(self) -> list[QParams]:
        """One ``(scale, zero_point, dtype)`` per model output."""
        return [self._qp(n) for n in self.graph.outputs]

    def _qp(self, name: str) -> QParams:
        t = self.graph.tensors[name]
        if t.scale is None:
            raise IRError(f"graph input/output {name!r} has no scale: this program is integer-only; use run_int, "
                          "or lower it from a quantized model (tabula.quantize) to get the float interface")
        return QParams(float(t.scale), int(t.zero_point), t.dtype)

    def _is_nchw(self, name: str) -> bool:
        return self.graph.io_layout.get(name) == "NCHW"

    # -- conversions ------------------------------------------------------------------------
    def quantize_inputs(self, *float_inputs) -> list[np.ndarray]:
        """Float inputs (PyTorch layout) -> integer inputs (device layout), with PyTorch's rounding.

        Raises ValueError if the count or a shape does not match the program;
        :class:`~tabula.errors.QuantizationError` for a complex input or one holding NaN or Inf (it has
        no integer code: quantizing would silently give a plausible one)."""
        if len(float_inputs) != len(self.graph.inputs):
            raise ValueError(f"program has {len(self.graph.inputs)} input(s), got {len(float_inputs)}")
        out = []
        for name, x in zip(self.graph.inputs, float_inputs):
            qp = self._qp(name)
            x = np.asarray(x.detach().cpu().numpy() if hasattr(x, "detach") else x)
            if np.iscomplexobj(x):
                raise QuantizationError(f"input {name!r} is complex ({x.dtype}); the program takes real float inputs: "
                                        "pass x.real (or split real and imaginary parts into channels)")
            x = x.astype(np.float32)
            if not np.isfinite(x).all():
                raise QuantizationError(f"input {name!r} holds {int((~np.isfinite(x)).sum())} NaN/Inf value(s); they "
                                        "have no integer code: clean the input (e.g. np.nan_to_num) first")
            given = tuple(x.shape)
            if self._is_nchw(name):
                if x.ndim != 4:
                    t4 = self.graph.tensors[name].shape
                    raise ValueError(f"input {name!r} must be 4-D NCHW {(t4[0], t4[3], t4[1], t4[2])}, got shape "
                                     f"{x.shape} (batch included: give x[None] for one sample)")
                x = x.transpose(0, 2, 3, 1)
            t = self.graph.tensors[name]
            if tuple(x.shape) != t.shape:
                want = t.shape if not self._is_nchw(name) else (t.shape[0], t.shape[3], t.shape[1], t.shape[2])
                raise ValueError(f"input {name!r}: shape {given} != the program's {tuple(want)} (batch included: give "
                                 f"x[None] for one sample)")
            q = quantize_round_half_even(x, qp.scale, qp.zero_point, t.dtype)
            if t.qrange:
                q = np.clip(q, *t.qrange).astype(t.dtype)
            out.append(q)
        return out

    def dequantize_outputs(self, int_outputs) -> list[np.ndarray]:
        """Integer outputs (device layout) -> float32 outputs (PyTorch layout)."""
        res = []
        for name, q in zip(self.graph.outputs, int_outputs):
            t, qp = self.graph.tensors[name], self._qp(name)
            y = dequantize(np.asarray(q).reshape(t.shape), qp.scale, qp.zero_point)
            res.append(y.transpose(0, 3, 1, 2) if self._is_nchw(name) else y)
        return res

    # -- execution --------------------------------------------------------------------------
    def run_int(self, *int_inputs) -> list[np.ndarray]:
        """Run the integer reference (the golden model) on integer inputs in device layout.

        Returns one integer array per output (device layout, the output tensor's dtype)."""
        from .reference.interpreter import run_graph

        return run_graph(self.graph, [np.asarray(x) for x in int_inputs])

    def run(self, *float_inputs) -> list[np.ndarray]:
        """Quantize float inputs, run the integer reference, dequantize: float32 outputs
        (PyTorch layout), one per model output.

        The program has the batch size it was exported with (usually 1); a batch of ``n`` such
        inputs is run one sample at a time and the outputs are concatenated on axis 0."""
        arrays = [np.asarray(x.detach().cpu().numpy() if hasattr(x, "detach") else x) for x in float_inputs]
        batch = [self.graph.tensors[n].shape[0] for n in self.graph.inputs]
        if arrays and all(b == 1 for b in batch) and all(a.ndim >= 1 and a.shape[0] == arrays[0].shape[0] > 1 for a in arrays):
            outs = [self.run(*[a[i : i + 1] for a in arrays]) for i in range(arrays[0].shape[0])]
            return [np.concatenate(parts, axis=0) for parts in zip(*outs)]
        return self.dequantize_outputs(self.run_int(*self.quantize_inputs(*arrays)))

    # -- files -------------------------------------------------------------------------------
    def save(self, directory: str | Path) -> Path:
        """Write ``ir.json`` + ``ir.npz`` into ``directory`` (created); returns the directory."""
        self.graph.save(directory)
        return Path(directory)

    @classmethod
    def load(cls, directory: str | Path) -> "Program":
        """Read a program written by :meth:`save`."""
        return cls(Graph.load(directory))

    def __repr__(self) -> str:
        ops = ", ".join(o.op for o in self.graph.ops)
        return f"Program({len(self.graph.ops)} ops: {ops})"
