"""IR -> C: render ``model.c`` / ``model.h`` from ``firmware_templates/*.j2``.

``model.c`` holds every constant (weights OHWI, biases, TABLEs, RESCALE multipliers/shifts) as
``const`` arrays, one statically planned arena (:mod:`.arena`) and ``tabula_model_run()``, a
straight-line list of kernel calls (``tabula_kernels.h``, generated from
``firmware_templates/kernels/manifest.toml``); each op's call comes from its module in ``codegen/ops/``
(context and template together); an int16 table op's TOSA sequence, and a softmax's, is one call
(:mod:`.fuse`).
Output is byte-for-byte reproducible for the same IR.
"""
from __future__ import annotations

import importlib
import pkgutil
import re
from dataclasses import dataclass
from pathlib import Path

import jinja2
import numpy as np

from .. import __version__, dtypes
from ..ir import Graph, verify
from . import ops as _ops_pkg
from .arena import ArenaPlan, plan_arena
from .fuse import fuse_softmax, fuse_table16

__all__ = ["generate", "GeneratedModel", "TEMPLATES_DIR", "RUNTIME_DIR"]

ROOT = Path(__file__).resolve().parents[3]
TEMPLATES_DIR = ROOT / "firmware_templates"
RUNTIME_DIR = TEMPLATES_DIR / "runtime"


def _discover() -> dict:
    table = {}
    for info in pkgutil.iter_modules(_ops_pkg.__path__):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{_ops_pkg.__name__}.{info.name}")
        table[mod.OP] = mod
    return table


OP_EMITTERS = _discover()


@dataclass
class GeneratedModel:
    """What :func:`generate` wrote: file paths, the arena plan and the constant bytes."""

    model_c: Path
    model_h: Path
    arena: ArenaPlan
    const_bytes: int


def c_ident(name: str) -> str:
    """A C identifier for a tensor name (non-identifier characters become ``_``)."""
    s = re.sub(r"[^0-9A-Za-z_]", "_", name)
    return s if not s[0].isdigit() else f"t_{s}"


def _c_array_body(values: np.ndarray, per_line: int = 16) -> str:
    flat = [str(int(v)) for v in np.asarray(values).reshape(-1)]
    return "\n".join("    " + ", ".join(flat[i : i + per_line]) + "," for i in range(0, len(flat), per_line))


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def generate(g: Graph, out_dir: str | Path, model_name: str = "model") -> GeneratedModel:
    """Render ``model.c`` and ``model.h`` for ``g`` into ``out_dir``.

    Raises:
        tabula.ir.IRError: the graph breaks an op contract.
        KeyError: an IR op with no emitter in ``codegen/ops`` (a development error).
    """
    verify(g)
    g = fuse_softmax(fuse_table16(g))  # codegen only: the IR keeps its TOSA ops
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plan = plan_arena(g)

    const_arrays: dict[str, tuple[str, np.ndarray, str]] = {}  # key -> (ctype, values, comment)
    for name, t in g.tensors.items():
        if t.const:
            const_arrays[name] = (dtypes.get(t.dtype).ctype, g.constants[name], f"{name} {list(t.shape)} {t.dtype}")
    for op in g.ops:
        extra = getattr(OP_EMITTERS[op.op], "constants", None)
        if extra:
            for key, vals in extra(op).items():
                const_arrays[key] = ("int32_t", np.asarray(vals, np.int64), f"{op.op} {key}")

    def ref(name: str, offset: bool = False):
        if offset:
            return plan.offsets.get(name)
        if name in const_arrays:
            return c_ident(name)
        return f"T_{c_ident(name).upper()}"

    activations = []
    for name, off in sorted(plan.offsets.items(), key=lambda kv: (kv[1], kv[0])):
        t = g.tensors[name]
        activations.append(
            dict(macro=ref(name), ctype=dtypes.get(t.dtype).ctype, offset=off, name=name, shape=list(t.shape), dtype=t.dtype, nbytes=t.nbytes)
        )

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    templates = {name: env.from_string(em.TEMPLATE) for name, em in OP_EMITTERS.items()}
    ops_ctx = []
    for op in g.ops:
        code = templates[op.op].render(**OP_EMITTERS[op.op].context(op, g, ref))
        ops_ctx.append(dict(op=op.op, inputs=op.inputs, outputs=op.outputs, source=op.source.replace("*/", "* /"), code=code))

    constants = [
        dict(cname=c_ident(k), ctype=ct, count=int(np.asarray(v).size), body=_c_array_body(v), comment=cm)
        for k, (ct, v, cm) in const_arrays.items()
    ]
    const_bytes = int(sum(np.asarray(v).size * np.dtype(ct.removesuffix("_t")).itemsize for ct, v, _ in const_arrays.values()))
    io = lambda names: [dict(nbytes=g.tensors[n].nbytes, offset=plan.offsets[n]) for n in names]  # noqa: E731

    common = dict(version=__version__, model_name=model_name, inputs=io(g.inputs), outputs=io(g.outputs), arena_bytes=max(plan.size, 16))
    model_h = out / "model.h"
    model_c = out / "model.c"
    _write_atomic(model_h, env.get_template("model.h.j2").render(**common))
    _write_atomic(
        model_c,
        env.get_template("model.c.j2").render(
            **common, constants=constants, activations=activations, ops=ops_ctx, const_bytes=const_bytes
        ),
    )
    return GeneratedModel(model_c, model_h, plan, const_bytes)
