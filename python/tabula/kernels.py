"""The C kernels, from their one manifest: ``firmware_templates/kernels/manifest.toml``.

The manifest holds, per op, the contract text, the C prototype (a template over the op's variants)
and the variants; the source of kernel ``tabula_<x>`` is ``<family>/tabula_<x>.c`` beside it.  From
it this module generates

* the public header ``tabula_kernels.h`` (:func:`header_text`, :func:`write_header`): the doc of
  every op as a comment and every prototype, after ``#include "tabula_types.h"`` (the fixed C part:
  the status enum and the ``tabula_window`` struct);
* the build list (:func:`sources`): the ``.c`` file of every kernel;
* the ctypes signatures (:func:`signature`, :func:`bind`), parsed from the rendered prototypes, with
  :func:`window_type`, :func:`requant_type` and :func:`status_codes` read from ``tabula_types.h`` (and
  :func:`requant_fields`, the word order :mod:`tabula.requant` packs).

There is no other list of kernels: the header, the firmware build (``toolchain/firmware.py``) and the
kernel harness of the tests and benchmarks (:mod:`tabula.harness`) all come from here.

A leaf module: the standard library, ctypes, :mod:`tabula.dtypes` and :func:`tabula.boards.repo_root`.
"""
from __future__ import annotations

import ctypes
import functools
import os
import re
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from tabula import dtypes
from tabula.boards import repo_root

__all__ = [
    "Kernel", "ManifestError", "kernels_dir", "manifest_path", "types_header_path", "load", "names", "sources",
    "header_text", "write_header", "status_codes", "window_fields", "window_type", "requant_fields", "requant_type",
    "ctype", "signature", "bind", "HEADER_NAME",
]

#: File name of the generated public header.
HEADER_NAME = "tabula_kernels.h"

_WRAP = 110  # columns of a prototype line in the generated header


class ManifestError(ValueError):
    """The manifest (or tabula_types.h) does not say what this module needs; the message names the
    entry and what is wrong."""


@dataclass(frozen=True)
class Kernel:
    """One C kernel of the manifest.

    ``name``: ``tabula_<op>_<variant>``; ``family``: its folder under ``firmware_templates/kernels``;
    ``doc``: the contract text of its op (shared by the op's variants); ``prototype``: the rendered C
    declaration on one line, without ``;``; ``ret``: the C return type; ``params``: ``(C type,
    name)`` per parameter; ``variant``: the parameters it was rendered with (empty for an op without
    variants); ``source``: the absolute path of its ``.c`` file.
    """

    name: str
    family: str
    doc: str
    prototype: str
    ret: str
    params: tuple[tuple[str, str], ...]
    variant: dict = field(default_factory=dict, compare=False, hash=False)
    source: Path = Path()


def kernels_dir() -> Path:
    """``<repo>/firmware_templates/kernels``: the kernel families, the manifest, the private and the
    fixed headers."""
    return repo_root() / "firmware_templates" / "kernels"


def manifest_path() -> Path:
    """``<repo>/firmware_templates/kernels/manifest.toml``."""
    return kernels_dir() / "manifest.toml"


def types_header_path() -> Path:
    """``<repo>/firmware_templates/kernels/tabula_types.h``: ``tabula_status``, ``tabula_window`` and
    ``tabula_requant``."""
    return kernels_dir() / "tabula_types.h"


# ---- the manifest ---------------------------------------------------------------------------------

def _one_line(text: str) -> str:
    """A prototype written over several lines, as one line with single spaces."""
    s = " ".join(text.split())
    return s.replace("( ", "(").replace(" )", ")").rstrip(";").strip()


_PROTO = re.compile(r"(?P<ret>[A-Za-z_][\w ]*?)\s*\b(?P<name>tabula_\w+)\s*\((?P<params>.*)\)")
_PARAM = re.compile(r"(?P<type>.*?[\w*])\s*\b(?P<name>[A-Za-z_]\w*)")


def _parse_prototype(proto: str, where: str) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    """``(return type, name, ((C type, name), ...))`` of a one-line prototype."""
    m = _PROTO.fullmatch(proto)
    if m is None:
        raise ManifestError(f"{where}: cannot read the prototype {proto!r} (want '<type> tabula_<name>(<params>)')")
    params = []
    for p in m["params"].split(","):
        pm = _PARAM.fullmatch(p.strip())
        if pm is None:
            raise ManifestError(f"{where}: cannot read the parameter {p.strip()!r} of {m['name']}")
        params.append((" ".join(pm["type"].split()), pm["name"]))
    return " ".join(m["ret"].split()), m["name"], tuple(params)


def _render(template: str, variant: dict, where: str) -> str:
    """The prototype template with ``{p}`` / ``{p_t}`` filled from one variant."""
    values = {}
    for key, value in variant.items():
        if not isinstance(value, str):
            raise ManifestError(f"{where}: variant parameter {key} = {value!r} is not a string")
        if value in dtypes.DTYPES:
            d = dtypes.DTYPES[value]
            values[key], values[f"{key}_t"] = d.sfx, d.ctype
        else:
            values[key] = value
    try:
        return template.format(**values)
    except KeyError as e:
        raise ManifestError(f"{where}: the prototype uses {{{e.args[0]}}}, which variant {variant} does not give "
                            f"(a dtype parameter p gives {{p}} and {{p_t}})") from None
    except (IndexError, ValueError) as e:
        raise ManifestError(f"{where}: the prototype is not a template of named {{fields}}: {e}") from None


def _doc(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


@functools.lru_cache(maxsize=8)
def _load(path: str) -> tuple[str, tuple[Kernel, ...]]:
    try:
        data = tomllib.loads(Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ManifestError(f"{path}: {e}") from None
    top_doc = data.pop("doc", "")
    if not isinstance(top_doc, str):
        raise ManifestError(f"{path}: the top-level doc must be a string")
    out: list[Kernel] = []
    seen: dict[str, str] = {}
    for family, entries in data.items():
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise ManifestError(f"{path}: [{family}] must be written [[{family}]] (a list of op entries)")
        for i, entry in enumerate(entries):
            where = f"{Path(path).name} [[{family}]] #{i + 1}"
            unknown = set(entry) - {"doc", "prototype", "variants"}
            missing = {"doc", "prototype"} - set(entry)
            if unknown or missing:
                raise ManifestError(f"{where}: keys are doc, prototype and optional variants "
                                    f"(missing {sorted(missing)}, unknown {sorted(unknown)})")
            if not isinstance(entry["doc"], str) or not isinstance(entry["prototype"], str):
                raise ManifestError(f"{where}: doc and prototype must be strings")
            template = _one_line(entry["prototype"])
            variants = entry.get("variants", [{}])
            if not isinstance(variants, list) or not variants or not all(isinstance(v, dict) for v in variants):
                raise ManifestError(f"{where}: variants must be a non-empty list of tables")
            for variant in variants:
                proto = _render(template, variant, where)
                ret, name, params = _parse_prototype(proto, where)
                if name in seen:
                    raise ManifestError(f"{where}: {name} is declared twice (also in {seen[name]})")
                seen[name] = where
                out.append(Kernel(name=name, family=family, doc=_doc(entry["doc"]), prototype=proto, ret=ret,
                                  params=params, variant=dict(variant),
                                  source=Path(path).parent / family / f"{name}.c"))
    if not out:
        raise ManifestError(f"{path}: no kernels")
    return _doc(top_doc), tuple(out)


def load(path: str | os.PathLike | None = None) -> tuple[Kernel, ...]:
    """Every kernel of the manifest (default :func:`manifest_path`), in manifest order.

    Raises :class:`ManifestError` for an unreadable manifest, an entry without ``doc`` or
    ``prototype`` or with other keys, a placeholder its variant does not fill, a prototype or
    parameter it cannot read, or a kernel name declared twice."""
    return _load(str(Path(path or manifest_path()).resolve()))[1]


def names(path: str | os.PathLike | None = None) -> list[str]:
    """The names of every kernel (``tabula_...``), in manifest order.  Raises as :func:`load`."""
    return [k.name for k in load(path)]


def sources(path: str | os.PathLike | None = None) -> list[Path]:
    """The build list: the absolute path of every kernel's ``.c`` file, in manifest order.

    Raises :class:`ManifestError` naming every source that does not exist (and as :func:`load`)."""
    srcs = [k.source for k in load(path)]
    missing = [str(s) for s in srcs if not s.is_file()]
    if missing:
        raise ManifestError(f"kernel sources named by the manifest are missing: {', '.join(missing)}")
    return srcs


# ---- the header -----------------------------------------------------------------------------------

def _comment(text: str) -> list[str]:
    return ["/*", *[f" * {line}".rstrip() for line in text.splitlines()], " */"]


def _wrap(proto: str) -> list[str]:
    """``proto;`` over lines of at most _WRAP columns, continuation lines aligned after the ``(``."""
    head, _, rest = proto.partition("(")
    params = [p.strip() for p in rest[:-1].split(",")]
    indent = " " * (len(head) + 1)
    lines, line = [], head + "("
    for i, p in enumerate(params):
        piece = p + (", " if i < len(params) - 1 else ");")
        if len(line) + len(piece.rstrip()) > _WRAP and line.strip() and not line.endswith("("):
            lines.append(line.rstrip())
            line = indent
        line += piece
    lines.append(line)
    return lines


def header_text(path: str | os.PathLike | None = None) -> str:
    """The text of ``tabula_kernels.h``: a banner with the manifest's top doc, ``#include
    "tabula_types.h"``, then per op its doc as a comment and its prototypes, in manifest order,
    inside ``extern "C"`` for C++.  Deterministic: the same manifest gives the same bytes.
    Raises as :func:`load`."""
    mpath = Path(path or manifest_path()).resolve()
    top, ks = _load(str(mpath))
    out = _comment(f"GENERATED from firmware_templates/kernels/{mpath.name} by python/tabula/kernels.py: "
                   f"do not edit.\n\n{top}")
    out += ["#ifndef TABULA_KERNELS_H", "#define TABULA_KERNELS_H", "", '#include "tabula_types.h"', "",
            "#ifdef __cplusplus", 'extern "C" {', "#endif"]
    family, doc = None, None
    for k in ks:
        if k.family != family:
            family = k.family
            out += ["", f"/* ---- {family}/ ".ljust(_WRAP - 13, "-") + " */"]
        if k.doc != doc:
            doc = k.doc
            out += ["", *_comment(doc)]
        out += _wrap(k.prototype)
    out += ["", "#ifdef __cplusplus", "}", "#endif", "", "#endif /* TABULA_KERNELS_H */", ""]
    return "\n".join(out)


def write_header(target: str | os.PathLike, path: str | os.PathLike | None = None) -> Path:
    """Write :func:`header_text` to ``target`` (its folder is created) through a temporary file in
    the same folder and a rename, so a reader never sees half a header.  Returns ``target`` as a
    Path.  Raises as :func:`load`, and OSError when the folder cannot be written."""
    target = Path(target)
    text = header_text(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


# ---- ctypes ---------------------------------------------------------------------------------------

def _types_text() -> str:
    return types_header_path().read_text()


def status_codes() -> dict[str, int]:
    """``{"TABULA_OK": 0, "TABULA_ERR_ARG": 1, ...}``: the ``tabula_status`` enum of tabula_types.h.
    Raises :class:`ManifestError` when the enum is not there or a value is not a literal."""
    m = re.search(r"typedef\s+enum\s*\{(?P<body>.*?)\}\s*tabula_status\s*;", _types_text(), re.S)
    if m is None:
        raise ManifestError(f"{types_header_path()}: no 'typedef enum {{...}} tabula_status;'")
    body = re.sub(r"/\*.*?\*/", "", m["body"], flags=re.S)
    codes = {}
    for item in filter(None, (s.strip() for s in body.split(","))):
        im = re.fullmatch(r"(\w+)\s*=\s*(\d+)", item)
        if im is None:
            raise ManifestError(f"{types_header_path()}: tabula_status entry {item!r} is not NAME = number")
        codes[im[1]] = int(im[2])
    return codes


def _struct_fields(name: str) -> list[tuple[str, str]]:
    """``[(C type, field), ...]`` of ``typedef struct {...} <name>;`` in tabula_types.h, in declaration
    order (``T a, b;`` gives two fields; a flexible array member ``T x[];`` the field ``x[]``)."""
    m = re.search(r"typedef\s+struct\s*\{(?P<body>[^{}]*)\}\s*" + name + r"\s*;", _types_text())
    if m is None:
        raise ManifestError(f"{types_header_path()}: no 'typedef struct {{...}} {name};'")
    fields: list[tuple[str, str]] = []
    for decl in filter(None, (s.strip() for s in re.sub(r"/\*.*?\*/", "", m["body"], flags=re.S).split(";"))):
        dm = re.fullmatch(r"(\w+)\s+(.+)", decl, re.S)
        if dm is None:
            raise ManifestError(f"{types_header_path()}: cannot read the {name} field {decl!r}")
        fields += [(dm[1], f.strip()) for f in dm[2].split(",")]
    return fields


def _int32_fields(name: str) -> tuple[str, ...]:
    fields = _struct_fields(name)
    bad = [f"{t} {f}" for t, f in fields if t != "int32_t"]
    if bad:
        raise ManifestError(f"{types_header_path()}: {name} field(s) {bad} are not int32_t")
    return tuple(f for _, f in fields)


def window_fields() -> tuple[str, ...]:
    """The field names of ``tabula_window`` in declaration order (all int32_t), from tabula_types.h.
    Raises :class:`ManifestError` when the struct is not there or holds another type."""
    return _int32_fields("tabula_window")


def requant_fields() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(header, channel)``: the int32 fields of ``tabula_requant`` before its flexible array member
    ``channel[]`` and those of one ``tabula_channel_scale`` entry, in declaration order, from
    tabula_types.h (the word order of a packed block: :func:`tabula.requant.pack`).  Raises
    :class:`ManifestError` when a struct is not there, holds another type, or ``channel[]`` is not the
    last field of ``tabula_requant``."""
    fields = _struct_fields("tabula_requant")
    if not fields or fields[-1] != ("tabula_channel_scale", "channel[]"):
        raise ManifestError(f"{types_header_path()}: tabula_requant must end with 'tabula_channel_scale channel[];'")
    bad = [f"{t} {f}" for t, f in fields[:-1] if t != "int32_t"]
    if bad:
        raise ManifestError(f"{types_header_path()}: tabula_requant field(s) {bad} are not int32_t")
    return tuple(f for _, f in fields[:-1]), _int32_fields("tabula_channel_scale")


@functools.lru_cache(maxsize=1)
def window_type() -> type[ctypes.Structure]:
    """The ctypes mirror of ``tabula_window`` (one class per process, so ``byref`` of an instance
    matches every bound signature).  Raises as :func:`window_fields`."""
    return type("Window", (ctypes.Structure,), {
        "_fields_": [(f, ctypes.c_int32) for f in window_fields()],
        "__doc__": "ctypes mirror of tabula_window (firmware_templates/kernels/tabula_types.h).",
    })


@functools.lru_cache(maxsize=1)
def requant_type() -> type[ctypes.Structure]:
    """The ctypes mirror of ``tabula_requant``'s fixed fields (a kernel reads its ``channel[]`` words
    after them: pass a packed block, ``tabula.requant.pack(...).ctypes.data_as(POINTER(requant_type()))``).
    Raises as :func:`requant_fields`."""
    return type("Requant", (ctypes.Structure,), {
        "_fields_": [(f, ctypes.c_int32) for f in requant_fields()[0]],
        "__doc__": "ctypes mirror of tabula_requant's fixed fields (firmware_templates/kernels/tabula_types.h).",
    })


def ctype(c_type: str):
    """The ctypes type of a C type the kernels use: ``int8_t`` .. ``int64_t`` (from
    :mod:`tabula.dtypes`), ``tabula_status`` (``c_int``), ``void *``, pointers to those, to
    ``tabula_window`` and to ``tabula_requant``, and pointers to pointers (``const int16_t *const *``, ``const void *const
    *``); ``const`` is ignored.  Raises :class:`ManifestError` for any other type."""
    words = c_type.replace("*", " * ").split()
    base = [w for w in words if w not in ("const", "*")]
    depth = words.count("*")
    scalars = {d.ctype: getattr(ctypes, f"c_{d.storage}") for d in dtypes.DTYPES.values()}
    if len(base) == 1:
        b = base[0]
        if depth == 0:
            t = scalars.get(b, ctypes.c_int if b == "tabula_status" else None)
        elif b == "void":
            t = ctypes.c_void_p
        elif b == "tabula_window":
            t = ctypes.POINTER(window_type())
        elif b == "tabula_requant":
            t = ctypes.POINTER(requant_type())
        else:
            t = ctypes.POINTER(scalars[b]) if b in scalars else None
        for _ in range(max(depth - 1, 0)):
            t = None if t is None else ctypes.POINTER(t)
        if t is not None:
            return t
    raise ManifestError(f"no ctypes type for the C type {c_type!r}")


def signature(kernel: Kernel) -> tuple[object, list]:
    """``(restype, argtypes)`` of one kernel, from its prototype.  Raises as :func:`ctype`."""
    return ctype(kernel.ret), [ctype(t) for t, _ in kernel.params]


def bind(lib: ctypes.CDLL, path: str | os.PathLike | None = None) -> dict[str, object]:
    """Set ``restype`` and ``argtypes`` of every manifest kernel in the loaded library ``lib``;
    returns ``{name: function}``.  Raises AttributeError naming a kernel the library does not
    export, and as :func:`load` / :func:`ctype`."""
    bound = {}
    for k in load(path):
        fn = getattr(lib, k.name)
        fn.restype, fn.argtypes = signature(k)
        bound[k.name] = fn
    return bound
