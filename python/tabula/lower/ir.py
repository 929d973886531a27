"""The integer IR: a closed set of TOSA-named ops over named, typed tensors.

A :class:`Graph` is a list of :class:`Op` in execution order over :class:`Tensor` objects.  Layout:
4-D activations are NHWC (the device layout); CONV2D weights are OHWI ``[Cout, KH, KW, Cin]``;
FULLY_CONNECTED weights are ``[Cout, Cin]``.  Constants (weights, biases, tables) live in
``Graph.constants`` as numpy arrays; the structure is JSON.

Op contracts (attributes; ``zp`` = zero point).  Semantics follow TOSA 1.0 unless noted.  "act" is
int8 (affine, any zp) or int16 (symmetric: zp must be 0); "acc" is int32 for int8 act and int64
(TOSA int48: values must fit 48 bits) for int16 act.

``CONV2D``            in: x act [N,H,W,Cin], w int8 [Cout,KH,KW,Cin], b acc [Cout] -> acc [N,OH,OW,Cout]
                      attrs: pad [top,bottom,left,right], stride [sy,sx], dilation [dy,dx], input_zp, weight_zp.
                      ``acc = b[o] + sum (x - input_zp)(w - weight_zp)``; padded positions contribute 0
                      (padding acts as the input zero point).  No wrapping allowed.
``FULLY_CONNECTED``   in: x act [N,Cin], w int8 [Cout,Cin], b acc [Cout] -> acc [N,Cout];
                      attrs: input_zp, weight_zp.  (TOSA 0.80 FULLY_CONNECTED.)
``RESCALE``           in: int8/int16/int32/int64 [..., C] -> int8/int16/int32; attrs: input_zp, output_zp,
                      multiplier [C or 1], shift [C or 1] (per-channel on the last axis when len > 1),
                      scale32 (bool; false = 16-bit multiplier, required for int64 inputs).
                      ``out = clamp(apply_scale(in - input_zp, m, s) + output_zp)`` to the output dtype,
                      single rounding (see :mod:`tabula.qmath`).  int32/int64 inputs need input_zp 0.
``TABLE``             int8:  x int8, table int8 [256] -> int8;  ``out = table[x + 128]``.
                      int16: x int16, table int16 [513] -> int32 (16.7 fixed point):
                      ``i = (x + 32768) >> 7; f = (x + 32768) & 127;
                      out = (table[i] << 7) + (table[i+1] - table[i]) * f``.
``MAX_POOL2D``        in: act [N,H,W,C] -> same dtype [N,OH,OW,C]; attrs: kernel [kh,kw], stride [sy,sx],
                      pad [top,bottom,left,right] (pad < kernel; padding never wins).
``AVG_POOL2D``        in: act [N,H,W,C] -> same dtype; attrs: kernel, stride, pad, input_zp, output_zp.
                      ``acc = sum over valid (non-pad) taps of (x - input_zp)`` (int32);
                      ``out = clamp(apply_scale_32(acc, reciprocal_scale(count)) + output_zp)`` with
                      count = valid taps in that window.
``CLAMP``             in: act -> same dtype and shape; attrs: min, max (integer codes, min <= max).
``ADD`` / ``SUB``     in: int32 a, int32 b (same shape) -> int32; no overflow allowed.
``MUL``               in: int32 a, int32 b (same shape) -> int32; attrs: shift (0): ``(a*b) >> shift``
                      with rounding ``+ 2^(shift-1)`` when shift > 0; the result must fit int32.
``CONCAT``            in: 1..n tensors of one dtype, equal except on ``axis`` -> joined; attrs: axis.
``SLICE``             in: any -> same dtype; attrs: start, size (one per dim): ``out[j] = x[start + j]``.
``PAD``               in: any -> same dtype; attrs: pad_before, pad_after (one per dim), pad_value (code).
``RESIZE``            in: act NHWC -> same dtype; attrs: mode "NEAREST", scale [sy, sx] (integers >= 1):
                      ``out[n][y][x][c] = x[n][y // sy][x // sx][c]`` (PyTorch upsample_nearest2d).
``RESHAPE``           in: any -> same dtype; attrs: shape (row-major, element order kept).
``TRANSPOSE``         in: any -> same dtype; attrs: perms (output dim i = input dim perms[i]).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

#: The closed op set.  Adding an op means: a contract above, a verifier rule below, a lowering, a
#: reference twin in ``tabula/reference/ops/``, a C kernel and a test.
OPS = (
    "CONV2D", "FULLY_CONNECTED", "RESCALE", "TABLE", "MAX_POOL2D", "AVG_POOL2D", "CLAMP",
    "ADD", "SUB", "MUL", "CONCAT", "SLICE", "PAD", "RESIZE", "RESHAPE", "TRANSPOSE",
)

DTYPES = ("int8", "int16", "int32", "int64")

#: accumulator dtype of each activation dtype (TOSA: int8 -> int32, int16 -> int48 held in int64)
ACC_DTYPE = {"int8": "int32", "int16": "int64"}
ACT_DTYPES = ("int8", "int16")


class IRError(ValueError):
    """An IR graph that breaks an op contract (wrong dtype, shape or attribute)."""


class LoweringError(ValueError):
    """A node of the converted graph that cannot be lowered; the message names the node and its source."""


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

    @property
    def numel(self) -> int:
        """Number of elements."""
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return np.dtype(self.dtype).itemsize  # int64 holds TOSA int48

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
            self.constants[t.name] = np.ascontiguousarray(data, dtype=t.dtype)
        return t

    def add_op(self, op: Op) -> Op:
        self.ops.append(op)
        return op

    # --- (de)serialisation ----------------------------------------------------------------
    def to_json(self) -> dict:
        return {
            "version": 1,
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
        """Read a graph written by :meth:`save`.  Raises FileNotFoundError naming the missing file."""
        d = Path(directory)
        for name in ("ir.json", "ir.npz"):
            if not (d / name).is_file():
                raise FileNotFoundError(f"{d / name} not found: not a saved tabula program directory")
        js = json.loads((d / "ir.json").read_text())
        g = cls(inputs=js["inputs"], outputs=js["outputs"], io_layout=js.get("io_layout", {}))
        with np.load(d / "ir.npz") as npz:
            consts = {k: npz[k] for k in npz.files}
        for tj in js["tensors"]:
            qr = tj.get("qrange")
            t = Tensor(tj["name"], tuple(tj["shape"]), tj["dtype"], tj["scale"], tj["zero_point"], tj["const"],
                       tuple(qr) if qr else None)
            g.tensors[t.name] = t
        g.constants = consts
        g.ops = [Op(o["op"], o["inputs"], o["outputs"], o["attrs"], o.get("source", "")) for o in js["ops"]]
        verify(g)
        return g


_RANGE = {"int8": (-128, 127), "int16": (-32768, 32767), "int32": (-(2**31), 2**31 - 1)}


def _conv_out(size: int, k: int, stride: int, pad0: int, pad1: int, dilation: int = 1) -> int:
    return (size + pad0 + pad1 - dilation * (k - 1) - 1) // stride + 1


def verify(g: Graph) -> None:
    """Check every op's contract (dtypes, shapes, attributes) and that each tensor is defined
    before it is used.  Raises :class:`IRError` naming the op, its source node and the problem."""
    defined = set(g.inputs) | {n for n, t in g.tensors.items() if t.const}
    for n in list(g.inputs) + list(g.outputs):
        if n not in g.tensors:
            raise IRError(f"graph input/output {n!r} has no tensor")
    for op in g.ops:
        where = f"{op.op} ({op.source or 'no source'})"
        if op.op not in OPS:
            raise IRError(f"{where}: unknown IR op; the IR has {', '.join(OPS)}")
        for n in op.inputs:
            if n not in defined:
                raise IRError(f"{where}: input {n!r} used before it is defined")
        ins = [g.tensors[n] for n in op.inputs]
        outs = [g.tensors[n] for n in op.outputs]
        a = op.attrs

        def need(cond: bool, msg: str) -> None:
            if not cond:
                raise IRError(f"{where}: {msg}")

        need(len(outs) == 1, "must have exactly one output")
        out = outs[0]
        if op.op in ("CONV2D", "FULLY_CONNECTED"):
            x, w, b = ins
            acc_t = ACC_DTYPE.get(x.dtype)
            need(acc_t is not None and w.dtype == "int8" and b.dtype == acc_t and out.dtype == acc_t,
                 f"dtypes must be act, int8, acc -> acc (got {x.dtype}, {w.dtype}, {b.dtype} -> {out.dtype})")
            need(x.dtype == "int8" or a["input_zp"] == 0, "int16 inputs must have input_zp 0")
            need(b.shape == (w.shape[0],), "bias must have Cout entries")
            if op.op == "CONV2D":
                need(len(x.shape) == 4 and len(w.shape) == 4 and x.shape[3] == w.shape[3], "x NHWC / w OHWI mismatch")
                pt, pb, pl, pr = a["pad"]
                sy, sx = a["stride"]
                dy, dx = a["dilation"]
                oh = _conv_out(x.shape[1], w.shape[1], sy, pt, pb, dy)
                ow = _conv_out(x.shape[2], w.shape[2], sx, pl, pr, dx)
                need(out.shape == (x.shape[0], oh, ow, w.shape[0]), f"output shape {out.shape} != {(x.shape[0], oh, ow, w.shape[0])}")
            else:
                need(len(x.shape) == 2 and x.shape[1] == w.shape[1], "x [N,Cin] / w [Cout,Cin] mismatch")
                need(out.shape == (x.shape[0], w.shape[0]), "output must be [N,Cout]")
        elif op.op == "RESCALE":
            (x,) = ins
            need(x.dtype in DTYPES and out.dtype in ("int8", "int16", "int32"), "dtypes")
            need(x.shape == out.shape, "shape must not change")
            m, s = a["multiplier"], a["shift"]
            scale32 = a.get("scale32", True)
            need(x.dtype != "int64" or not scale32, "int64 (int48) inputs need scale32=false")
            need(len(m) == len(s) and len(m) in (1, x.shape[-1]), "multiplier/shift must have 1 or C entries")
            mmax = 2**31 if scale32 else 2**15
            need(all(0 <= v < mmax for v in m) and all(2 <= v <= 62 for v in s), "multiplier/shift out of range")
            need(x.dtype not in ("int32", "int64") or a["input_zp"] == 0, "int32/int64 inputs must have input_zp 0 (TOSA RESCALE)")
            lo, hi = _RANGE[out.dtype]
            need(lo <= a["output_zp"] <= hi, f"output_zp {a['output_zp']} outside {out.dtype}")
            need(out.dtype == "int8" or a["output_zp"] == 0, "int16/int32 outputs need output_zp 0 (TOSA RESCALE)")
            need(x.dtype != "int16" or a["input_zp"] == 0, "int16 inputs need input_zp 0 (TOSA RESCALE)")
        elif op.op == "TABLE":
            x, t = ins
            if x.dtype == "int8":
                need(t.dtype == "int8" and t.shape == (256,) and out.dtype == "int8", "int8 TABLE: 256 int8 entries -> int8")
            else:
                need(x.dtype == "int16" and t.dtype == "int16" and t.shape == (513,) and out.dtype == "int32",
                     "int16 TABLE: 513 int16 entries -> int32")
            need(out.shape == x.shape, "output must have the input's shape")
        elif op.op in ("MAX_POOL2D", "AVG_POOL2D"):
            (x,) = ins
            kh, kw = a["kernel"]
            sy, sx = a["stride"]
            pt, pb, pl, pr = a["pad"]
            need(x.dtype == out.dtype and x.dtype in ACT_DTYPES and len(x.shape) == 4, "act NHWC in and out, same dtype")
            need(max(pt, pb) < kh and max(pl, pr) < kw, "padding must be smaller than the kernel (TOSA)")
            exp = (x.shape[0], _conv_out(x.shape[1], kh, sy, pt, pb), _conv_out(x.shape[2], kw, sx, pl, pr), x.shape[3])
            need(out.shape == exp, f"output shape {out.shape} != {exp}")
            if op.op == "AVG_POOL2D":
                need(x.dtype == "int8" or a["input_zp"] == a["output_zp"] == 0, "int16 zero points must be 0")
        elif op.op == "CLAMP":
            (x,) = ins
            lo, hi = _RANGE[x.dtype]
            need(x.dtype in ACT_DTYPES and out.dtype == x.dtype and out.shape == x.shape, "act in, same out")
            need(lo <= a["min"] <= a["max"] <= hi, f"min/max {a['min']}..{a['max']} outside {x.dtype}")
        elif op.op in ("ADD", "SUB", "MUL"):
            need(len(ins) == 2 and all(t.dtype == "int32" for t in ins + outs), "int32 a, b -> int32")
            need(ins[0].shape == ins[1].shape == out.shape, "shapes must be equal (no broadcasting)")
            if op.op == "MUL":
                need(0 <= a.get("shift", 0) <= 62, "shift out of range")
        elif op.op == "CONCAT":
            ax = a["axis"]
            need(len(ins) >= 1 and all(t.dtype == out.dtype for t in ins), "one dtype for all inputs and the output")
            need(0 <= ax < len(out.shape), "axis out of range")
            for t in ins:
                need(len(t.shape) == len(out.shape) and all(t.shape[i] == out.shape[i] for i in range(len(out.shape)) if i != ax),
                     f"input {t.name} {t.shape} does not fit output {out.shape} on axis {ax}")
            need(sum(t.shape[ax] for t in ins) == out.shape[ax], "axis sizes must add up")
        elif op.op == "SLICE":
            (x,) = ins
            st, sz = a["start"], a["size"]
            need(len(st) == len(sz) == len(x.shape) and out.dtype == x.dtype, "start/size per dim, same dtype")
            need(all(0 <= b and 0 <= n and b + n <= d for b, n, d in zip(st, sz, x.shape)), "slice out of bounds")
            need(out.shape == tuple(sz), f"output shape {out.shape} != size {sz}")
        elif op.op == "PAD":
            (x,) = ins
            pb, pa = a["pad_before"], a["pad_after"]
            need(len(pb) == len(pa) == len(x.shape) and min(pb + pa, default=0) >= 0, "pad_before/pad_after per dim, >= 0")
            need(out.dtype == x.dtype and out.shape == tuple(d + b + e for d, b, e in zip(x.shape, pb, pa)), "output shape")
            lo, hi = _RANGE.get(x.dtype, (-(2**63), 2**63 - 1))
            need(lo <= a["pad_value"] <= hi, "pad_value outside the dtype")
        elif op.op == "RESIZE":
            (x,) = ins
            sy, sx = a["scale"]
            need(a.get("mode") == "NEAREST" and sy >= 1 and sx >= 1 and len(x.shape) == 4, "NEAREST, integer scale >= 1, NHWC")
            n, h, w, c = x.shape
            need(out.dtype == x.dtype and out.shape == (n, h * sy, w * sx, c), "output shape")
        elif op.op == "RESHAPE":
            (x,) = ins
            need(out.dtype == x.dtype and int(np.prod(out.shape)) == int(np.prod(x.shape)), "element count/dtype")
            need(tuple(a["shape"]) == out.shape, "attr shape != output shape")
        elif op.op == "TRANSPOSE":
            (x,) = ins
            p = a["perms"]
            need(sorted(p) == list(range(len(x.shape))), "perms must permute the input dims")
            need(out.shape == tuple(x.shape[i] for i in p) and out.dtype == x.dtype, "output shape")
        defined.update(op.outputs)
    for n in g.outputs:
        if n not in defined:
            raise IRError(f"graph output {n!r} is never produced")
