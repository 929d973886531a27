"""IR -> C: render ``model.c`` / ``model.h`` from ``firmware_templates/*.j2``.

``model.c`` holds every constant (weights OHWI, biases, TABLEs, RESCALE multipliers/shifts) as
``const`` arrays (those of at least :data:`BINARY_MIN_BYTES` as bytes in ``model_constants.bin``, assembled
by ``model_constants.S``, model.c declaring them), one statically planned arena (:mod:`.arena`; split in parts across the board's
regions when it does not fit one, constants placed likewise: :mod:`.placement`) and ``tabula_model_run()``, a
straight-line list of kernel calls (``tabula_kernels.h``, generated from
``firmware_templates/kernels/manifest.toml``); each op's call comes from its module in ``codegen/ops/``
(context and template together); an int16 table op's TOSA sequence, a softmax's, and a CONV2D / FULLY_CONNECTED with its RESCALE
(and CLAMP) is one call (:mod:`.fusion`).
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
from ..files import write_atomic
from ..ir import Graph, verify
from . import ops as _ops_pkg
from .arena import ArenaPlan, plan_arena
from .fusion import fuse_all
from .placement import Placement, place
from .profile import emitted_entries, op_entries

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
    """What :func:`generate` wrote: file paths, the arena plan (``size``: every part's bytes; one
    part unless the board's memory made placement split it), the constant bytes and the placement."""

    model_c: Path
    model_h: Path
    arena: ArenaPlan
    const_bytes: int
    placement: Placement | None = None
    ops: list | None = None      # profile: one entry per emitted op (codegen/profile.py), else None
    emitted: list | None = None  # every build: one entry per emitted op with its tensors (profile.emitted_entries)


def c_ident(name: str) -> str:
    """A C identifier for a tensor name (non-identifier characters become ``_``)."""
    s = re.sub(r"[^0-9A-Za-z_]", "_", name)
    return s if not s[0].isdigit() else f"t_{s}"


def _c_array_body(values: np.ndarray, per_line: int = 16) -> str:
    flat = [str(int(v)) for v in np.asarray(values).reshape(-1)]
    return "\n".join("    " + ", ".join(flat[i : i + per_line]) + "," for i in range(0, len(flat), per_line))


#: Constant arrays of at least this many bytes go to ``model_constants.bin`` (assembled by ``model_constants.S``
#: with ``.incbin``) instead of C text: C spells a byte in about 4.5 characters and gcc parses a million of
#: them in about a second; the small ones (multipliers, biases, tables) stay readable in model.c.
BINARY_MIN_BYTES = 1024


def _constant_arrays(const_arrays: dict, itemsize: dict, sections: dict) -> tuple[list[dict], bytearray]:
    """The template entries of the constant arrays and the bytes of ``model_constants.bin``: an integer array
    of at least :data:`BINARY_MIN_BYTES` is ``binary`` (its little-endian bytes at a 16-byte aligned
    ``offset`` of the blob, its assembler ``symbol`` and section), any other one keeps its C ``body``.

    Raises:
        ValueError: a value that does not fit the array's C type (a development error)."""
    out, blob = [], bytearray()
    for k, (ct, v, cm) in const_arrays.items():
        values = np.asarray(v)
        entry = dict(cname=c_ident(k), ctype=ct, count=int(values.size), comment=cm, section=sections[k],
                     nbytes=int(values.size) * itemsize[k], binary=False)
        if entry["nbytes"] >= BINARY_MIN_BYTES and re.fullmatch(r"u?int(8|16|32)_t", ct):
            dt = np.dtype(ct.removesuffix("_t")).newbyteorder("<")
            raw = values.reshape(-1).astype(dt)
            if not np.array_equal(raw.astype(np.int64), values.reshape(-1).astype(np.int64)):
                raise ValueError(f"constant {k} holds values outside {ct}")
            blob += bytes(-len(blob) % 16)
            entry.update(binary=True, offset=len(blob), symbol=f"tabula_const_{entry['cname']}",
                         asm_section=sections[k] or f".rodata.tabula_const_{entry['cname']}")
            blob += raw.tobytes()
        else:
            entry["body"] = _c_array_body(values)
        out.append(entry)
    return out, blob


def _write_atomic(path: Path, text: str) -> None:
    write_atomic(path, text)


def _share_identical(const_arrays: dict) -> tuple[dict, dict[str, str]]:
    """One C array for each set of identical constant arrays (same C type and values): the kept arrays
    (the first of each set, in order; its comment counts the others) and every key -> the kept key.
    An unrolled recurrence gives every step's FULLY_CONNECTED the same folded bias, requantization block
    and multipliers: stored once, like the weights."""
    kept: dict[str, tuple[str, np.ndarray, str]] = {}
    alias: dict[str, str] = {}
    first: dict[tuple, str] = {}
    shared: dict[str, int] = {}
    for key, (ctype, values, comment) in const_arrays.items():
        v = np.asarray(values)
        sig = (ctype, v.shape, v.astype(np.int64).tobytes() if v.dtype.kind in "iub" else v.tobytes())
        if sig in first:
            alias[key] = first[sig]
            shared[first[sig]] += 1
            continue
        first[sig] = alias[key] = key
        shared[key] = 0
        kept[key] = (ctype, values, comment)
    kept = {k: (ct, v, cm if not shared[k] else f"{cm}; also {shared[k]} identical array(s) of other ops")
            for k, (ct, v, cm) in kept.items()}
    return kept, alias


def generate(g: Graph, out_dir: str | Path, model_name: str = "model", memory=None,
             profile: bool = False, npu=None, debug: bool = False) -> GeneratedModel:
    """Render ``model.c`` and ``model.h`` for ``g`` into ``out_dir``.

    ``memory``: the board's :class:`tabula.memory.MemoryMap` (``board.memory``); constants and
    arena are placed in its regions (:mod:`.placement`).  None: every array in its default section.
    ``profile``: read ``tabula_board_ticks()`` around every op into ``tabula_model_op_ticks[]`` (model.h
    defines ``TABULA_MODEL_N_PROFILED_OPS``; the runtime sends them in OUTPUT) and return the op list
    (:func:`.profile.op_entries`) in ``GeneratedModel.ops``; False (default) renders the same bytes as
    before profiling existed.
    ``npu``: an NPU build (:class:`.npu.NpuCodegen`: the plan, its folder, the test-only stand-in or not):
    each NPU segment is one ``tabula_npu_run()`` call and its command stream, weights and the scratch are
    arrays placed in the regions the plan names (:mod:`.npu`); None: a CPU-only build, as before.
    ``debug``: also render ``tabula_model_run_until(op)`` and ``tabula_model_op_output(op, &nbytes)``
    (model.h defines ``TABULA_MODEL_N_DEBUG_OPS``; the runtime then answers TENSOR requests,
    docs/protocol.md); False (default) renders the same bytes as before.  Every build returns the
    emitted op list with each op's input and output tensors in ``GeneratedModel.emitted``
    (:func:`.profile.emitted_entries`).

    Raises:
        tabula.ir.IRError: the graph breaks an op contract.
        tabula.errors.StageError: the model does not fit the board's memory (region, bytes, budget);
            nothing is written.
        KeyError: an IR op with no emitter in ``codegen/ops`` (a development error).
    """
    verify(g)
    standin: list = []
    if npu is None:
        g = fuse_all(g)  # codegen only: the IR keeps its TOSA ops
        planned = g
    else:
        from .npu import split_for_npu

        g, planned, standin = split_for_npu(g, npu)  # fused per segment; NPU segments as NPU_SEGMENT calls
    out = Path(out_dir)
    whole = plan_arena(planned)
    emitted = g.ops + [op for body in standin for op in body.ops]

    const_arrays: dict[str, tuple[str, np.ndarray, str]] = {}  # key -> (ctype, values, comment)
    for name, t in planned.tensors.items():
        if t.const:
            const_arrays[name] = (dtypes.get(t.dtype).ctype, planned.constants[name], f"{name} {list(t.shape)} {t.dtype}")
    for op in emitted:
        extra = getattr(OP_EMITTERS[op.op], "constants", None)
        if extra:
            for key, vals in extra(op).items():
                const_arrays[key] = ("int32_t", np.asarray(vals, np.int64), f"{op.op} {key}")

    const_arrays, alias = _share_identical(const_arrays)
    itemsize = {k: np.dtype(ct.removesuffix("_t")).itemsize for k, (ct, _, _) in const_arrays.items()}
    fixed = None
    if npu is not None:
        from .npu import npu_arrays

        fixed = npu_arrays(npu)
    placement = place(planned, {k: int(np.asarray(v).size) * itemsize[k] for k, (_, v, _) in const_arrays.items()},
                      memory, model_name, fixed=fixed)
    out.mkdir(parents=True, exist_ok=True)
    parts = placement.parts

    def ref(name: str, offset: bool = False):
        if offset:  # (arena part, byte offset): equal only for the same bytes
            return placement.location(name)
        if name in alias:
            return c_ident(alias[name])
        return f"T_{c_ident(name).upper()}"

    activations = []
    for name, (i, off) in sorted(((n, placement.location(n)) for n in placement.tensor_part), key=lambda kv: (kv[1], kv[0])):
        t = planned.tensors[name]
        activations.append(
            dict(macro=ref(name), ctype=dtypes.get(t.dtype).ctype, offset=off, name=name, shape=list(t.shape), dtype=t.dtype,
                 nbytes=t.nbytes, array=parts[i].cname)
        )

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    templates = {name: env.from_string(em.TEMPLATE) for name, em in OP_EMITTERS.items()}
    def render(op):
        code = templates[op.op].render(**OP_EMITTERS[op.op].context(op, planned, ref))
        out_t = planned.tensors.get(op.outputs[0]) or g.tensors[op.outputs[0]]
        return dict(op=op.op, inputs=op.inputs, outputs=op.outputs, source=op.source.replace("*/", "* /"), code=code,
                    out_ref=ref(op.outputs[0]), out_bytes=out_t.nbytes)

    ops_ctx = [render(op) for op in g.ops]
    npu_ctx = None
    if npu is not None:
        from .npu_render import npu_context

        npu_ctx = npu_context(npu, placement, standin, [[render(op) for op in body.ops] for body in standin], ref)

    constants, blob = _constant_arrays(const_arrays, itemsize, placement.const_section)
    const_bytes = int(sum(np.asarray(v).size * itemsize[k] for k, (_, v, _) in const_arrays.items()))
    io = lambda names: [dict(nbytes=g.tensors[n].nbytes, offset=placement.location(n)[1],  # noqa: E731
                             array=parts[placement.tensor_part[n]].cname) for n in names]
    arenas = [dict(cname=p.cname, section=p.section, region=p.region, nbytes=max(p.plan.size, 16),
                   macro="TABULA_MODEL_ARENA_BYTES" if i == 0 else f"TABULA_MODEL_ARENA_{p.region.upper()}_BYTES")
              for i, p in enumerate(parts)]
    moved = [dict(region=r["name"], constants=r["constants"], n_constants=r["n_constants"], arena=r["arena"])
             for r in placement.regions if r["constants"] or r["arena"]]
    default = memory is None or (len(parts) == 1 and parts[0].section is None
                                 and not any(placement.const_section.values()))

    common = dict(version=__version__, model_name=model_name, inputs=io(g.inputs), outputs=io(g.outputs),
                  arena_bytes=arenas[0]["nbytes"], arenas=arenas, placement=None if default else moved,
                  profile=profile, n_ops=len(ops_ctx), npu=npu_ctx, debug=debug)
    model_h = out / "model.h"
    model_c = out / "model.c"
    _write_atomic(model_h, env.get_template("model.h.j2").render(**common))
    # the large arrays as bytes, assembled with .incbin (no C text for the compiler to parse); written every
    # build (empty when there are none), so the build's file list does not depend on the model
    write_atomic(out / "model_constants.bin", bytes(blob))
    _write_atomic(out / "model_constants.S", env.get_template("model_constants.S.j2").render(
        version=__version__, model_name=model_name, min_bytes=BINARY_MIN_BYTES, arrays=[c for c in constants if c["binary"]]))
    _write_atomic(
        model_c,
        env.get_template("model.c.j2").render(
            **common, constants=constants, activations=activations, ops=ops_ctx, const_bytes=const_bytes
        ),
    )
    merged = {n: placement.location(n)[1] for n in placement.tensor_part}
    entries = op_entries(g, [o["code"] for o in ops_ctx]) if profile else None
    if entries is not None and npu is not None:  # an NPU segment's MACs are its IR ops'
        from .npu_render import segment_macs

        for e, op in zip(entries, g.ops):
            if op.op == "NPU_SEGMENT":
                e["macs"] = segment_macs(npu, int(op.attrs["segment"]))
    emitted = emitted_entries(g, [o["code"] for o in ops_ctx])
    if npu is not None:
        from .npu_render import segment_macs

        for e, op in zip(emitted, g.ops):
            if op.op == "NPU_SEGMENT":
                e["macs"] = segment_macs(npu, int(op.attrs["segment"]))
    return GeneratedModel(model_c, model_h, ArenaPlan(merged, placement.arena_bytes, whole.lower_bound), const_bytes, placement,
                          entries, emitted)
