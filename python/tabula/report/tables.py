"""Per-TABLE-op error bounds and plots, from the IR alone.

Every table op in the IR carries, on its (first) op, ``attrs["function"]`` (the aten op, a key of
``rules.TABLE``), ``attrs["args"]`` / ``attrs["kwargs"]`` (its constant extra arguments, e.g. elu's
alpha) and ``attrs["domain"]`` (``[lo, hi]`` or None).  From those and the op's table(s) and tensors,
the error of what the device computes is recomputed over *every* input code
(:func:`tabula.qmath.table_error_lsb`).  An int8 table op is one TABLE.  An int16 one is a group of TOSA
ops (:func:`tabula.lowering.ops.table.emit_int16`) whose first op names the int16 result in
``attrs["output"]``; beyond one TABLE it also lists ``attrs["input"]``, ``attrs["terms"]``
(``[{"zoom": k, "centre": c, "hi": const name, "lo": const name or None}]``) and, for the exact
piecewise-linear ops, ``attrs["ramps"]`` / ``attrs["product"]`` / ``attrs["frac_bits"]``
(:class:`tabula.qmath.Table16Plan`); the group's other TABLEs carry only ``{"part": ...}``.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

import numpy as np

from ..ir import Graph, Op
from ..qmath import (
    TABLE16_RESCALE,
    Ramp16,
    Table16Plan,
    Table16Product,
    Table16Term,
    dequantize,
    table16_apply,
    table_error_lsb,
)

__all__ = ["op_function", "table_of", "table_report", "plot_tables"]


def op_function(function: str, args=(), kwargs: dict | None = None) -> Callable[[np.ndarray], np.ndarray]:
    """The numpy function of a table op: PyTorch's own float op (``rules.TABLE[function]``) with its
    constant extra arguments; float32 in -> float32 out, float64 -> float64."""
    import torch

    from .. import rules

    fn = rules.TABLE[function]
    args, kwargs = list(args or ()), dict(kwargs or {})

    def f(v: np.ndarray) -> np.ndarray:
        return fn(torch.from_numpy(np.ascontiguousarray(v)), *args, **kwargs).numpy()

    return f


def _output_qparams(g: Graph, op: Op) -> tuple[str, float, int]:
    """(output tensor name, scale, zero point) of the table op's *real* output: the TABLE output for
    int8, the consuming RESCALE x 2^-7's output for int16."""
    out = g.tensors[op.outputs[0]]
    if out.dtype == "int8":
        return out.name, float(out.scale), int(out.zero_point)
    if op.attrs.get("output") in g.tensors:
        y = g.tensors[op.attrs["output"]]
        return y.name, float(y.scale), int(y.zero_point)
    for nxt in g.ops:
        if nxt.op == "RESCALE" and nxt.inputs and nxt.inputs[0] == out.name:
            m, s = nxt.attrs["multiplier"], nxt.attrs["shift"]
            if (list(np.atleast_1d(m)), list(np.atleast_1d(s))) == ([TABLE16_RESCALE[0]], [TABLE16_RESCALE[1]]):
                y = g.tensors[nxt.outputs[0]]
                return y.name, float(y.scale), int(y.zero_point)
    raise ValueError(f"TABLE ({op.source}): its int32 output {out.name!r} is not followed by a RESCALE x 2^-7")


def _table_ops(g: Graph):
    for op in g.ops:
        if "function" in op.attrs:
            yield op


def table_of(g: Graph, op: Op):
    """The op's table: the int8 / single int16 table, or the :class:`Table16Plan` of its terms, ramps
    and product (``op`` is the table op's first op)."""
    a = op.attrs
    if not a.get("terms") and not a.get("ramps"):
        return g.constants[op.inputs[1]]
    terms = tuple(Table16Term(int(t["zoom"]), g.constants[t["hi"]], None if t.get("lo") is None else g.constants[t["lo"]],
                              int(t.get("centre", 0))) for t in a.get("terms") or ())
    ramps = tuple(Ramp16(int(r["lo"]), int(r["hi"]), int(r["multiplier"]), int(r["shift"]), int(r.get("sign", 1)))
                  for r in a.get("ramps") or ())
    p = a.get("product")
    product = None if p is None else Table16Product(int(p["mul_shift"]), int(p["multiplier"]), int(p["shift"]))
    extra = {"frac_bits": int(a["frac_bits"])} if "frac_bits" in a else {}
    if a.get("final") is not None:
        extra["final"] = (int(a["final"][0]), int(a["final"][1]))
    return Table16Plan(terms, ramps, product, **extra)


def _domain(op: Op):
    d = op.attrs.get("domain")
    return None if d is None else (float(d[0]), float(d[1]))


def table_report(graph: Graph) -> list[dict]:
    """One row per TABLE op: ``source``, ``function``, ``args``, ``dtype``, ``form`` and ``tables``
    (int16: ``single``/1, ``split``/2, ``zoom<k>``/2, ``zoom<k>+split``/4), ``output`` (tensor name),
    ``max_lsb``, ``mean_lsb`` (error of the device output against the exact function, in output LSB, over
    every input code; saturation at the range ends counted apart in ``saturated``)."""
    rows = []
    seen: dict[tuple, dict] = {}  # identical tables (every step of an unrolled recurrence): measured once
    for op in _table_ops(graph):
        x = graph.tensors[op.attrs.get("input", op.inputs[0])]
        table = table_of(graph, op)
        out_name, s_out, zp_out = _output_qparams(graph, op)
        key = (op.attrs["function"], repr(op.attrs.get("args")), repr(op.attrs.get("kwargs")), x.dtype, float(x.scale),
               int(x.zero_point), s_out, zp_out, repr(_domain(op)), _table_key(table))
        if key not in seen:
            f = op_function(op.attrs["function"], op.attrs.get("args"), op.attrs.get("kwargs"))
            seen[key] = table_error_lsb(f, table, float(x.scale), int(x.zero_point), s_out, zp_out, x.dtype,
                                        domain=_domain(op))
        e = seen[key]
        plan = table if isinstance(table, Table16Plan) else None
        rows.append({
            "source": op.source,
            "function": op.attrs["function"],
            "args": list(op.attrs.get("args") or []),
            "dtype": x.dtype,
            "form": plan.form if plan else "single",
            "tables": plan.n_tables if plan else 1,
            "output": out_name,
            "max_lsb": round(e["max_lsb"], 4),
            "mean_lsb": round(e["mean_lsb"], 4),
            "saturated": e["saturated"],
        })
    return rows


def _table_key(table) -> bytes:
    """The bytes that decide a table op's outputs: its entries (int8), or every term's tables, centres,
    zooms and ramps (a :class:`Table16Plan`)."""
    if isinstance(table, Table16Plan):
        return repr(table).encode() + b"".join(np.asarray(a).tobytes() for t in table.terms
                                              for a in (t.hi, t.lo) if a is not None)
    return np.asarray(table).tobytes()


def plot_tables(graph: Graph, out_dir: str | Path) -> list[Path]:
    """Write one PNG per TABLE op into ``out_dir`` (``<n>_<function>_<dtype>.png``): f and the
    dequantized device output against the input value, and below the error in output LSB per input
    code.  Returns the paths written.  Needs matplotlib (Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for n, op in enumerate(_table_ops(graph)):
        x_t = graph.tensors[op.attrs.get("input", op.inputs[0])]
        table = table_of(graph, op)
        _, s_out, zp_out = _output_qparams(graph, op)
        f = op_function(op.attrs["function"], op.attrs.get("args"), op.attrs.get("kwargs"))
        dom = _domain(op)
        if x_t.dtype == "int8":
            codes = np.arange(-128, 128)
            dev = table.astype(np.int64)
        else:
            codes = np.arange(-32768, 32768)
            dev = table16_apply(table, codes).astype(np.int64)
        x = (codes - int(x_t.zero_point)) * float(x_t.scale)
        xc = x if dom is None else np.clip(x, *dom)
        with np.errstate(all="ignore"):
            exact = np.asarray(f(xc.astype(np.float64)), dtype=np.float64)
        lo, hi = (-128, 127) if x_t.dtype == "int8" else (-32768, 32767)
        err = dev - np.clip(exact / s_out + zp_out, lo, hi)
        fig, (a0, a1) = plt.subplots(2, 1, figsize=(7, 6), sharex=True, gridspec_kw={"height_ratios": [2, 1]})
        a0.plot(x, exact, label="f (float64)", lw=1.0)
        a0.plot(x, dequantize(dev, s_out, zp_out), label=f"device {x_t.dtype} table (dequantized)", lw=0.8, ls="--")
        a0.set_ylabel("output")
        a0.legend(loc="best", fontsize=8)
        args = op.attrs.get("args") or []
        form = f" ({table.form}, {table.n_tables} tables)" if isinstance(table, Table16Plan) else ""
        a0.set_title(f"{op.attrs['function']}{tuple(args) if args else ''} {x_t.dtype}{form} -- "
                     f"{op.source or 'no source'}", fontsize=9)
        a1.plot(x, err, lw=0.6, color="C3")
        a1.axhline(0, color="k", lw=0.4)
        a1.set_ylabel("error (output LSB)")
        a1.set_xlabel("input value")
        a1.set_title(f"max |err| {np.abs(err).max():.3f} LSB, mean {np.abs(err).mean():.3f} LSB", fontsize=8)
        fig.tight_layout()
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{n:02d}_{op.attrs['function'].replace('aten.', '')}_{x_t.dtype}")
        p = out_dir / f"{name}.png"
        fig.savefig(p, dpi=90)
        plt.close(fig)
        paths.append(p)
    return paths
