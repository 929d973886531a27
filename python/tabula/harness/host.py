"""The C kernels on the host: built with ``cc`` into a shared library and called through ctypes.

:func:`build` compiles the manifest's build list (``firmware_templates/kernels/manifest.toml``, with the
header generated from it) into ``libtabula_kernels.so``.  :class:`KernelLib` calls any kernel by name
with numpy arrays (:meth:`KernelLib.call`, :meth:`KernelLib.status`): the argument conversions come
from the kernel's prototype (:func:`tabula.kernels.signature`), so there is no wrapper per kernel.  Its
op methods (``conv2d``, ``clamp``, ``table16``, ...) only shape one op's arguments (output shapes,
windows, the dtype that picks a variant) and return the output arrays; the device harness
(:mod:`tabula.harness.device`) inherits them and runs the same calls on an emulated core.

Argument rules (by the C type of the parameter): an integer for a scalar; None for NULL; a numpy array
(or anything ``np.asarray`` takes) for ``const T *`` (converted to T, C order); a C-contiguous numpy
array of exactly T for ``T *`` and any array for ``void *`` (outputs: written in place); a
:data:`Window` for ``const tabula_window *``; the int32 words of :func:`tabula.requant.pack` for
``const tabula_requant *``; a list of arrays (or None) for ``const T *const *``.  A status other than
TABULA_OK raises :class:`KernelError` (:meth:`KernelLib.call`).
"""
from __future__ import annotations

import contextlib
import ctypes as C
import shutil
import subprocess
from pathlib import Path

import numpy as np

from .. import dtypes, kernels

__all__ = ["CFLAGS", "TABULA_OK", "TABULA_ERR_ARG", "Window", "KernelError", "KernelLib", "compiler",
           "include_flags", "build", "out_like"]

CFLAGS = ["-O2", "-shared", "-fPIC", "-std=c99", "-Wall", "-Wextra", "-Werror"]

_STATUS = kernels.status_codes()
TABULA_OK, TABULA_ERR_ARG = _STATUS["TABULA_OK"], _STATUS["TABULA_ERR_ARG"]

#: ctypes mirror of ``tabula_window`` (firmware_templates/kernels/tabula_types.h)
Window = kernels.window_type()

#: numpy dtype of each C integer type of the prototypes
_NP = {d.ctype: d.np for d in dtypes.DTYPES.values()}
#: kernel name suffix of each numpy dtype (s8, s16, s32, s64)
_SFX = {d.np: d.sfx for d in dtypes.DTYPES.values()}

#: ctypes pointer types, for a test that calls the bound library (``KernelLib.lib``) directly
_i8p, _i16p, _i32p, _i64p = (C.POINTER(t) for t in (C.c_int8, C.c_int16, C.c_int32, C.c_int64))
_rqp = kernels.ctype("const tabula_requant *")
_PTR = {np.dtype(np.int8): (_i8p, "s8"), np.dtype(np.int16): (_i16p, "s16"), np.dtype(np.int32): (_i32p, "s32"),
        np.dtype(np.int64): (_i64p, "s64")}

#: The fill byte of an output before a call: an element the kernel fails to write shows up instead of
#: passing by luck with whatever np.empty held.
FILL = 0x5A


class KernelError(RuntimeError):
    """A kernel returned a status other than TABULA_OK."""

    def __init__(self, name: str, status: int):
        super().__init__(f"{name} returned status {status}")
        self.status = status


def compiler() -> str | None:
    """The host C compiler (``cc``), or None when absent."""
    return shutil.which("cc")


def include_flags(include_dir: Path) -> list[str]:
    """``-I`` flags for a kernel source: the generated header's folder, then the kernels' own
    (tabula_internal.h, tabula_types.h)."""
    return ["-I", str(include_dir), "-I", str(kernels.kernels_dir())]


def build(out_dir: Path, extra_flags=()) -> Path:
    """Write the generated tabula_kernels.h into ``out_dir/include`` and compile the manifest's
    kernel sources into ``out_dir/libtabula_kernels.so``; raise with the compiler output on failure."""
    cc = compiler()
    if cc is None:
        raise FileNotFoundError("no host C compiler 'cc' on PATH")
    include = Path(out_dir) / "include"
    kernels.write_header(include / kernels.HEADER_NAME)
    lib = Path(out_dir) / "libtabula_kernels.so"
    sources = [str(p) for p in kernels.sources()]
    r = subprocess.run([cc, *CFLAGS, *extra_flags, *include_flags(include), "-o", str(lib), *sources],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"building the kernels failed:\n{r.stderr}")
    return lib


def out_like(shape, dtype) -> np.ndarray:
    """An output buffer of ``shape`` and ``dtype`` pre-filled with the byte :data:`FILL`."""
    out = np.empty(shape, dtype=dtype)
    out.reshape(-1).view(np.uint8).fill(FILL)
    return out


def _c(a, dtype) -> np.ndarray:
    return np.asarray(a, dtype=dtype, order="C")


def _sfx(a: np.ndarray) -> str:
    return _SFX[np.asarray(a).dtype]


def _base(ctype: str) -> str:
    return ctype.replace("const", "").replace("*", "").strip()


def _conv_out(x_hw, w_khw, pad, stride, dilation) -> tuple[int, int]:
    """The output height and width of a window op (pad [t, b, l, r])."""
    return tuple((x_hw[i] + pad[2 * i] + pad[2 * i + 1] - dilation[i] * (w_khw[i] - 1) - 1) // stride[i] + 1
                 for i in range(2))


def _requant_out(name: str, in_dtype, requant, out_dtype) -> tuple[str, object]:
    """The kernel and output dtype of an accumulator kernel call: ``name`` writing accumulators (``requant``
    None: dtype None), ``name`` requantizing to the input's own type, or -- ``out_dtype`` the other of
    int8 / int16 -- the precision boundary's kernel ``<name>_<out>``."""
    if requant is None:
        if out_dtype is not None:
            raise ValueError(f"{name}: out_dtype {out_dtype} needs a requant block")
        return name, None
    odt = np.dtype(in_dtype if out_dtype is None else out_dtype)
    if odt == np.dtype(in_dtype):
        return name, odt
    if {odt, np.dtype(in_dtype)} != {np.dtype(np.int8), np.dtype(np.int16)}:
        raise ValueError(f"{name}: no kernel from {np.dtype(in_dtype)} to {odt}")
    return f"{name}_{_sfx(np.empty(0, odt))}", odt


class KernelLib:
    """The C kernels called by name with numpy arrays (:meth:`call`), and one method per op that shapes
    its arguments; shapes follow the IR (NHWC, OHWI).  ``path``: a library from :func:`build`."""

    def __init__(self, path: Path):
        self.path = path
        self._kernels = {k.name: k for k in kernels.load()}
        self.lib = C.CDLL(str(path))
        self._fns = kernels.bind(self.lib)  # restype/argtypes of every kernel, from the manifest

    # ---- any kernel, by name --------------------------------------------------------------------
    def kernel(self, name: str) -> kernels.Kernel:
        """The manifest entry of kernel ``name``; KeyError naming the manifest when there is none."""
        if name not in self._kernels:
            raise KeyError(f"no kernel {name!r} in {kernels.manifest_path()}")
        return self._kernels[name]

    def has(self, name: str) -> bool:
        return name in self._kernels

    def _normalize(self, k: kernels.Kernel, args: tuple) -> list:
        """The arguments of one call as the prototype types them: numpy arrays of the parameter's type
        for pointers (converted for ``const T *``, checked for outputs), lists of arrays for tables."""
        if len(args) != len(k.params):
            raise TypeError(f"{k.name} takes {len(k.params)} arguments ({k.prototype}), got {len(args)}")
        out = []
        for (ctype, pname), a in zip(k.params, args):
            base, const = _base(ctype), ctype.startswith("const")
            if "*" not in ctype or a is None or isinstance(a, Window) or base == "tabula_window":
                out.append(a)
            elif ctype.count("*") == 2:
                out.append([None if t is None else np.ascontiguousarray(t) if base == "void" else _c(t, _NP[base])
                            for t in a])
            elif base == "tabula_requant":
                out.append(_c(a, np.int32))
            elif base == "void" or not const:
                arr = np.asarray(a) if const else a
                if not isinstance(arr, np.ndarray) or (not const and not arr.flags.c_contiguous):
                    raise TypeError(f"{k.name}: parameter {pname} ({ctype}) takes a C-contiguous numpy array")
                if base != "void" and arr.dtype != _NP[base]:
                    raise TypeError(f"{k.name}: parameter {pname} ({ctype}) takes {_NP[base]}, got {arr.dtype}")
                out.append(np.ascontiguousarray(arr) if const else arr)
            else:
                out.append(_c(a, _NP[base]))
        return out

    def _invoke(self, k: kernels.Kernel, args: list) -> int:
        """Run one normalized call; returns the kernel's status."""
        cargs = []
        for (ctype, _), a in zip(k.params, args):
            if "*" not in ctype:
                cargs.append(int(a))
            elif a is None:
                cargs.append(None)
            elif isinstance(a, Window):
                cargs.append(C.byref(a))
            elif isinstance(a, list):
                ptr = kernels.ctype(ctype.replace("*const *", "*").replace("* const *", "*"))
                cargs.append((ptr * max(len(a), 1))(*[ptr() if t is None else t.ctypes.data_as(ptr) for t in a]))
            elif _base(ctype) == "void":
                cargs.append(a.ctypes.data_as(C.c_void_p))
            else:
                cargs.append(a.ctypes.data_as(kernels.ctype(ctype)))
        return int(self._fns[k.name](*cargs))

    def status(self, name: str, *args) -> int:
        """The status of one call of kernel ``name`` with ``args`` (see the module doc for the argument
        rules); no exception for a refused call."""
        k = self.kernel(name)
        return self._invoke(k, self._normalize(k, args))

    def call(self, name: str, *args) -> None:
        """One call of kernel ``name``; raises :class:`KernelError` unless it returns TABULA_OK."""
        s = self.status(name, *args)
        if s != TABULA_OK:
            raise KernelError(name, s)

    @contextlib.contextmanager
    def batch(self):
        """As the device harness's batch: here every call runs at once (yields an empty list)."""
        yield []

    # ---- scalar helpers (host only: they return their result) ------------------------------------
    def apply_scale_32(self, value: int, multiplier: int, shift: int) -> int:
        return int(self.lib.tabula_apply_scale_32(value, multiplier, shift))

    def apply_scale_16(self, value: int, multiplier: int, shift: int) -> int:
        return int(self.lib.tabula_apply_scale_16(value, multiplier, shift))

    # ---- window ops -----------------------------------------------------------------------------
    @staticmethod
    def window(x_shape, out_hw, kernel, stride, dilation, pad) -> Window:
        n, h, w, c = x_shape
        return Window(n, h, w, c, out_hw[0], out_hw[1], kernel[0], kernel[1], stride[0], stride[1],
                      dilation[0], dilation[1], pad[0], pad[2])

    def conv2d(self, x, w, b, *, pad, stride, dilation, input_zp, weight_zp, out_hw=None, requant=None,
               out_dtype=None) -> np.ndarray:
        """x [N,H,W,Cin] int8 (tabula_conv2d_s8) or int16 (tabula_conv2d_s16: int64 bias/output,
        ``input_zp`` 0), w [Cout,KH,KW,Cin] int8, b [Cout] or None; pad [t,b,l,r].  ``requant`` (a
        block packed by :func:`tabula.requant.pack`): the fused epilogue, int8 / int16 out.  ``out_dtype``
        int8 (with ``requant``, an int16 x): the precision boundary's tabula_conv2d_s16_s8."""
        x = np.asarray(x)
        wide = x.dtype == np.int16
        if wide and input_zp != 0:
            raise ValueError("tabula_conv2d_s16 has no input zero point (int16 is symmetric)")
        w = np.asarray(w)
        out_hw = out_hw or _conv_out(x.shape[1:3], w.shape[1:3], pad, stride, dilation)
        win = self.window(x.shape, out_hw, w.shape[1:3], stride, dilation, pad)
        shape = (x.shape[0], out_hw[0], out_hw[1], w.shape[0])
        if wide:
            name, odt = _requant_out("tabula_conv2d_s16", x.dtype, requant, out_dtype)
            out = out_like(shape, np.int64 if odt is None else odt)
            self.call(name, win, w.shape[0], x, w, weight_zp, b, requant, out)
        else:
            if out_dtype is not None:
                raise ValueError("tabula_conv2d_s8 has no precision boundary kernel: use conv2d_folded")
            out = out_like(shape, np.int32 if requant is None else np.int8)
            self.call("tabula_conv2d_s8", win, w.shape[0], x, input_zp, w, weight_zp, b, requant, out)
        return out

    def conv2d_folded(self, x, w, b, *, pad, stride, dilation, pad_value, out_hw=None, requant=None,
                      out_dtype=None) -> np.ndarray:
        """tabula_conv2d_s8_folded: x [N,H,W,Cin] int8, w [Cout,KH,KW,Cin] int8 (symmetric), b [Cout]
        int32 (the folded bias) or None; padded taps read as ``pad_value``.  ``out_dtype`` int16 (with
        ``requant``): the precision boundary's tabula_conv2d_s8_s16_folded."""
        x, w = np.asarray(x), np.asarray(w)
        out_hw = out_hw or _conv_out(x.shape[1:3], w.shape[1:3], pad, stride, dilation)
        win = self.window(x.shape, out_hw, w.shape[1:3], stride, dilation, pad)
        name, odt = _requant_out("tabula_conv2d_s8", x.dtype, requant, out_dtype)
        out = out_like((x.shape[0], out_hw[0], out_hw[1], w.shape[0]), np.int32 if odt is None else odt)
        self.call(f"{name}_folded", win, w.shape[0], x, pad_value, w, b, requant, out)
        return out

    def depthwise_conv2d(self, x, w, b, *, pad, stride, dilation, input_zp, weight_zp, out_hw=None,
                         requant=None, out_dtype=None) -> np.ndarray:
        """x [N,H,W,C] int8 (tabula_depthwise_conv2d_s8, int32 bias/output) or int16 (_s16, int64
        bias/output, ``input_zp`` must be 0); w [KH,KW,C,M] int8; b [C*M] or None; pad [t,b,l,r].
        ``requant``: the fused epilogue's block, int8 / int16 out.  ``out_dtype`` (with ``requant``): the
        other activation type (int16 for an int8 x, int8 for an int16 x) calls the precision boundary's
        kernel ``tabula_depthwise_conv2d_<in>_<out>``."""
        x, w = np.asarray(x), np.asarray(w)
        wide = x.dtype == np.int16
        if wide and input_zp != 0:
            raise ValueError("tabula_depthwise_conv2d_s16 has no input zero point (int16 is symmetric)")
        out_hw = out_hw or _conv_out(x.shape[1:3], w.shape[0:2], pad, stride, dilation)
        win = self.window(x.shape, out_hw, w.shape[0:2], stride, dilation, pad)
        acc = np.int64 if wide else np.int32
        name, odt = _requant_out(f"tabula_depthwise_conv2d_{_sfx(x)}", x.dtype, requant, out_dtype)
        out = out_like((x.shape[0], out_hw[0], out_hw[1], x.shape[3] * w.shape[3]), acc if odt is None else odt)
        zp = () if wide else (input_zp,)
        self.call(name, win, w.shape[3], x, *zp, w, weight_zp, b, requant, out)
        return out

    def _pool(self, op: str, x, kernel, stride, pad, dilation, *zps) -> np.ndarray:
        x = np.asarray(x, order="C")
        if x.dtype not in (np.int8, np.int16):
            raise TypeError(f"no C {op} for {x.dtype}")
        n, h, w, c = x.shape
        out_hw = _conv_out((h, w), kernel, pad, stride, (1, 1))
        out = out_like((n, out_hw[0], out_hw[1], c), x.dtype)
        self.call(f"tabula_{op}_{_sfx(x)}", self.window(x.shape, out_hw, kernel, stride, dilation, pad), x, *zps, out)
        return out

    def max_pool2d(self, x, *, kernel, stride, pad, dilation=(1, 1)) -> np.ndarray:
        """int8 or int16 x [N,H,W,C] (the dtype picks tabula_max_pool2d_s8 / _s16)."""
        return self._pool("max_pool2d", x, kernel, stride, pad, dilation)

    def avg_pool2d(self, x, *, kernel, stride, pad, input_zp=0, output_zp=0, dilation=(1, 1)) -> np.ndarray:
        """int8 or int16 x [N,H,W,C] (the dtype picks tabula_avg_pool2d_s8 / _s16)."""
        return self._pool("avg_pool2d", x, kernel, stride, pad, dilation, input_zp, output_zp)

    # ---- dense / elementwise --------------------------------------------------------------------
    def fully_connected(self, x, w, b, *, input_zp, weight_zp, requant=None) -> np.ndarray:
        """x [N,Cin] int8 (or int16: tabula_fully_connected_s16, int64 bias/output, input_zp 0).
        ``requant`` (:func:`tabula.requant.pack`): the fused epilogue, int8 / int16 out."""
        x, w = np.asarray(x), np.asarray(w)
        n, cin, cout = x.shape[0], x.shape[1], w.shape[0]
        if x.dtype == np.int16:
            if input_zp != 0:
                raise ValueError("tabula_fully_connected_s16 has no input zero point (int16 is symmetric)")
            out = out_like((n, cout), np.int64 if requant is None else np.int16)
            self.call("tabula_fully_connected_s16", n, cin, cout, x, w, weight_zp, b, requant, out)
        else:
            out = out_like((n, cout), np.int32 if requant is None else np.int8)
            self.call("tabula_fully_connected_s8", n, cin, cout, x, input_zp, w, weight_zp, b, requant, out)
        return out

    def matmul(self, a, b, *, a_zp=0, b_zp=0) -> np.ndarray:
        """a [N,H,C], b [N,C,W] both int8 (tabula_matmul_s8 -> int32) or both int16 (tabula_matmul_s16 ->
        int64 holding int48)."""
        a, b = np.asarray(a, order="C"), np.asarray(b, order="C")
        if a.dtype != b.dtype or a.dtype not in (np.int8, np.int16):
            raise TypeError(f"no C MATMUL for {a.dtype} x {b.dtype}")
        n, h, c = a.shape
        out = out_like((n, h, b.shape[2]), np.int32 if a.dtype == np.int8 else np.int64)
        self.call(f"tabula_matmul_{_sfx(a)}", n, h, c, b.shape[2], a, a_zp, b, b_zp, out)
        return out

    def rescale(self, x, *, input_zp, output_zp, multiplier, shift, output_dtype="int8", clamp=None) -> np.ndarray:
        """``x`` [..., C] -> ``output_dtype``; the dtypes pick ``tabula_rescale_<in>_<out>`` (int64 input:
        the scale32=false kernel).  Per-channel when len(multiplier) > 1.  ``clamp=(out_min, out_max)``:
        ``tabula_rescale_clamp_<in>_<out>`` (a RESCALE and its CLAMP in one call)."""
        x = np.asarray(x, order="C")
        m, s = np.atleast_1d(multiplier), np.atleast_1d(shift)
        per_channel = int(m.size > 1)
        channels = x.shape[-1] if (per_channel and x.ndim) else 1
        out = out_like(x.shape, output_dtype)
        kind = "rescale" if clamp is None else "rescale_clamp"
        name = f"tabula_{kind}_{_sfx(x)}_{_sfx(out)}"
        if not self.has(name):
            raise TypeError(f"no C {kind.upper()} {x.dtype} -> {output_dtype}")
        bounds = () if clamp is None else (int(clamp[0]), int(clamp[1]))
        self.call(name, x, x.size, channels, input_zp, output_zp, m, s, per_channel, *bounds, out)
        return out

    def clamp(self, x, min_val, max_val) -> np.ndarray:
        """int8 or int16 ``x`` (tabula_clamp_s8 / _s16)."""
        x = np.asarray(x, order="C")
        out = out_like(x.shape, x.dtype)
        self.call(f"tabula_clamp_{_sfx(x)}", x, x.size, min_val, max_val, out)
        return out

    def _binary(self, name: str, a, b, *extra) -> np.ndarray:
        a, b = _c(a, np.int32), _c(b, np.int32)
        if a.shape != b.shape:
            raise ValueError(f"{name}: shapes {a.shape} and {b.shape} differ")
        out = out_like(a.shape, np.int32)
        self.call(name, a, b, a.size, *extra, out)
        return out

    def add(self, a, b) -> np.ndarray:
        return self._binary("tabula_add_s32", a, b)

    def sub(self, a, b) -> np.ndarray:
        return self._binary("tabula_sub_s32", a, b)

    def mul(self, a, b, shift=0) -> np.ndarray:
        return self._binary("tabula_mul_s32", a, b, shift)

    def intdiv(self, a, b) -> np.ndarray:
        return self._binary("tabula_intdiv_s32", a, b)

    def add_requant(self, a, b, params, out_dtype=None) -> np.ndarray:
        """``tabula_add_requant_<t>``: int8 or int16 ``a`` and ``b`` of one shape, ``params`` int32 [12];
        the output has ``out_dtype`` (default: ``a``'s).  When ``a``, ``b`` and the output do not all
        have one type, ``tabula_add_requant_<ta>_<tb>_<to>``."""
        a = np.ascontiguousarray(a)
        b = np.ascontiguousarray(b) if isinstance(b, np.ndarray) else _c(b, a.dtype)
        out_dtype = np.dtype(a.dtype if out_dtype is None else out_dtype)
        if a.shape != b.shape or any(d not in (np.int8, np.int16) for d in (a.dtype, b.dtype, out_dtype)):
            raise ValueError(f"add_requant: {a.dtype}{a.shape} and {b.dtype}{b.shape} -> {out_dtype}")
        out = out_like(a.shape, out_dtype)
        sfx = [_sfx(a), _sfx(b), _sfx(out)]
        self.call(f"tabula_add_requant_{sfx[0] if len(set(sfx)) == 1 else '_'.join(sfx)}", a, b, a.size, params, out)
        return out

    def _bcast(self, name: str, a, b, *extra) -> np.ndarray:
        """``tabula_<op>_bcast_s32`` over int32 ``a`` and ``b`` of one rank (shapes broadcast as TOSA)."""
        a, b = _c(a, np.int32), _c(b, np.int32)
        if a.ndim != b.ndim:
            raise ValueError(f"{name}: ranks {a.ndim} and {b.ndim} differ")
        out = out_like(tuple(y if x == 1 else x for x, y in zip(a.shape, b.shape)), np.int32)
        self.call(name, a, a.shape, b, b.shape, a.ndim, *extra, out)
        return out

    def add_bcast(self, a, b) -> np.ndarray:
        return self._bcast("tabula_add_bcast_s32", a, b)

    def sub_bcast(self, a, b) -> np.ndarray:
        return self._bcast("tabula_sub_bcast_s32", a, b)

    def mul_bcast(self, a, b, shift=0) -> np.ndarray:
        return self._bcast("tabula_mul_bcast_s32", a, b, shift)

    # ---- tables ---------------------------------------------------------------------------------
    def table(self, x, table) -> np.ndarray:
        """int8 x + 256-entry int8 table -> int8; int16 x + 513-entry int16 table -> int32 (16.7)."""
        x = np.asarray(x, order="C")
        out = out_like(x.shape, np.int32 if x.dtype == np.int16 else np.int8)
        self.call(f"tabula_table_{_sfx(x)}", x, x.size, table, out)
        return out

    def table16(self, x, plan) -> np.ndarray:
        """int16 x + a ``qmath.Table16Plan`` (or one 513-entry table) -> int16: the fused
        ``tabula_table16_s16`` (tables only, centred terms included) or ``tabula_table16_ramps_s16``
        (ramps, a product step)."""
        from tabula import qmath

        if not isinstance(plan, qmath.Table16Plan):
            plan = qmath.Table16Plan((qmath.Table16Term(0, np.asarray(plan)),))
        x = _c(x, np.int16)
        out = out_like(x.shape, np.int16)
        terms = plan.terms
        zoom, centre = [t.zoom for t in terms] or [0], [t.centre for t in terms] or [0]
        his = [t.hi for t in terms] or [None]
        los = [t.lo for t in terms] if plan.split else None
        if not plan.ramps and plan.product is None:
            self.call("tabula_table16_s16", x, x.size, len(terms), zoom, centre, his, los, out)
            return out
        ramps = [v for r in plan.ramps for v in (r.lo, r.hi, r.multiplier, r.shift, r.sign)]
        if plan.product is not None:
            final = [plan.product.mul_shift, plan.product.multiplier, plan.product.shift]
        elif plan.final is not None:
            final = [-1, plan.final[0], plan.final[1]]
        else:
            final = [-1, 1 << 30, 30 + plan.frac_bits]
        self.call("tabula_table16_ramps_s16", x, x.size, len(terms), zoom, centre, his, los, len(plan.ramps),
                  ramps or None, final, out)
        return out

    # ---- data movement (any dtype) --------------------------------------------------------------
    def concat(self, xs, axis) -> np.ndarray:
        """Join arrays of one dtype along ``axis`` with tabula_concat (outer blocks x inner bytes)."""
        xs = [np.ascontiguousarray(x) for x in xs]
        shape = list(xs[0].shape)
        shape[axis] = sum(x.shape[axis] for x in xs)
        out = out_like(shape, xs[0].dtype)
        outer = int(np.prod(shape[:axis], dtype=np.int64))
        inner = [x.nbytes // outer if outer else 0 for x in xs]
        self.call("tabula_concat", xs, inner, len(xs), outer, out)
        return out

    def slice(self, x, start, size) -> np.ndarray:
        """``tabula_slice`` of any dtype, rank 1..6."""
        x = np.asarray(x, order="C")
        out = out_like(tuple(size), x.dtype)
        self.call("tabula_slice", x, x.shape, start, size, x.ndim, x.itemsize, out)
        return out

    def pad(self, x, pad_before, pad_after, pad_value) -> np.ndarray:
        """``tabula_pad`` of any dtype, rank 1..6."""
        x = np.asarray(x, order="C")
        out = out_like(tuple(d + b + a for d, b, a in zip(x.shape, pad_before, pad_after)), x.dtype)
        self.call("tabula_pad", x, x.shape, pad_before, pad_after, x.ndim, x.itemsize,
                  np.array([pad_value], dtype=x.dtype), out)
        return out

    def resize_nearest(self, x, scale) -> np.ndarray:
        """``tabula_resize_nearest`` of an NHWC tensor, any dtype."""
        x = np.asarray(x, order="C")
        n, h, w, c = x.shape
        out = out_like((n, h * scale[0], w * scale[1], c), x.dtype)
        self.call("tabula_resize_nearest", x, n, h, w, c, scale[0], scale[1], x.itemsize, out)
        return out

    def transpose(self, x, perms) -> np.ndarray:
        x = np.asarray(x, order="C")
        out = out_like(tuple(x.shape[i] for i in perms), x.dtype)
        self.call("tabula_transpose", x, x.shape, perms, x.ndim, x.itemsize, out)
        return out

    def tile(self, x, multiples) -> np.ndarray:
        """``tabula_tile`` of any dtype, rank 1..6."""
        x = np.asarray(x, order="C")
        out = out_like(tuple(d * k for d, k in zip(x.shape, multiples)), x.dtype)
        self.call("tabula_tile", x, x.shape, multiples, x.ndim, x.itemsize, out)
        return out

    def gather(self, values, indices) -> np.ndarray:
        """``tabula_gather`` (TOSA GATHER): values [N, K, C] of any dtype, int32 indices [N, W] -> [N, W, C]."""
        values, indices = np.asarray(values, order="C"), np.ascontiguousarray(indices, dtype=np.int32)
        n, k, c = values.shape
        out = out_like((n, indices.shape[1], c), values.dtype)
        self.call("tabula_gather", values, indices, n, k, indices.shape[1], c * values.itemsize, out)
        return out

    # ---- reductions, the fused softmax ----------------------------------------------------------
    @staticmethod
    def _around(shape, axis: int) -> tuple[int, int, int]:
        shape = [int(d) for d in shape]
        axis %= len(shape)
        return int(np.prod(shape[:axis], dtype=np.int64)), shape[axis], int(np.prod(shape[axis + 1:], dtype=np.int64))

    def _reduce(self, op: str, x, axis: int) -> np.ndarray:
        x = np.asarray(x, order="C")
        outer, n, inner = self._around(x.shape, axis)
        shape = list(x.shape)
        shape[axis] = 1
        out = out_like(tuple(shape), x.dtype)
        self.call(f"tabula_{op}_{_sfx(x)}", x, outer, n, inner, out)
        return out

    def reduce_max(self, x, axis: int) -> np.ndarray:
        """int8 / int16 / int32 ``x`` (tabula_reduce_max_s8 / _s16 / _s32), keeping the reduced dim as 1."""
        return self._reduce("reduce_max", x, axis)

    def reduce_sum(self, x, axis: int) -> np.ndarray:
        """int32 ``x`` (tabula_reduce_sum_s32), keeping the reduced dim as 1."""
        return self._reduce("reduce_sum", _c(x, np.int32), axis)

    def softmax(self, x, axis: int, exp_hi, exp_lo, split_bits: int, exp_shift: int, scales, output_zp: int) -> np.ndarray:
        """The fused ``tabula_softmax_s8`` / ``_s16`` (by ``x``'s dtype) along ``axis``; ``exp_lo`` None
        for one level."""
        x = np.asarray(x, order="C")
        outer, n, inner = self._around(x.shape, axis)
        out = out_like(x.shape, x.dtype)
        self.call(f"tabula_softmax_{_sfx(x)}", x, outer, n, inner, exp_hi, exp_lo, split_bits, exp_shift, scales,
                  output_zp, out)
        return out
