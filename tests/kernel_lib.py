"""Build the C kernels (the build list of firmware_templates/kernels/manifest.toml, with the header
generated from it) into a host shared library and wrap them with ctypes, taking and returning numpy
arrays.  Every signature comes from the manifest (tabula.kernels.bind).  Used by tests/ops through
the ``kernel_lib`` fixture (tests/conftest.py).  Each wrapper raises :class:`KernelError` on a
non-zero status."""
from __future__ import annotations

import ctypes as C
import shutil
import subprocess
from pathlib import Path

import numpy as np

from tabula import kernels

CFLAGS = ["-O2", "-shared", "-fPIC", "-std=c99", "-Wall", "-Wextra", "-Werror"]

_STATUS = kernels.status_codes()
TABULA_OK, TABULA_ERR_ARG = _STATUS["TABULA_OK"], _STATUS["TABULA_ERR_ARG"]

_i8p = C.POINTER(C.c_int8)
_i16p = C.POINTER(C.c_int16)
_i32p = C.POINTER(C.c_int32)
_i64p = C.POINTER(C.c_int64)
_rqp = kernels.ctype("const tabula_requant *")
#: numpy dtype -> (ctypes pointer type, kernel name suffix)
_PTR = {np.dtype(np.int8): (_i8p, "s8"), np.dtype(np.int16): (_i16p, "s16"), np.dtype(np.int32): (_i32p, "s32"),
        np.dtype(np.int64): (_i64p, "s64")}

#: ctypes mirror of ``tabula_window`` (firmware_templates/kernels/tabula_types.h)
Window = kernels.window_type()


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


def build(out_dir: Path) -> Path:
    """Write the generated tabula_kernels.h into ``out_dir/include`` and compile the manifest's
    kernel sources into ``out_dir/libtabula_kernels.so``; raise with the compiler output on failure."""
    cc = compiler()
    if cc is None:
        raise FileNotFoundError("no host C compiler 'cc' on PATH")
    include = Path(out_dir) / "include"
    kernels.write_header(include / kernels.HEADER_NAME)
    lib = Path(out_dir) / "libtabula_kernels.so"
    sources = [str(p) for p in kernels.sources()]
    r = subprocess.run([cc, *CFLAGS, *include_flags(include), "-o", str(lib), *sources], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"building the kernels failed:\n{r.stderr}")
    return lib


def _ptr(a: np.ndarray | None, typ):
    return None if a is None else a.ctypes.data_as(typ)


def _out(shape, dtype) -> np.ndarray:
    """An output buffer pre-filled with a byte pattern (0x5A), so an element the kernel fails to
    write shows up instead of passing by luck with whatever np.empty held."""
    out = np.empty(shape, dtype=dtype)
    out.reshape(-1).view(np.uint8).fill(0x5A)
    return out


def _c(a, dtype) -> np.ndarray:
    return np.asarray(a, dtype=dtype, order="C")


class KernelLib:
    """numpy-facing wrappers over the C kernels; shapes follow the IR (NHWC, OHWI)."""

    def __init__(self, path: Path):
        self.path = path
        self.lib = C.CDLL(str(path))
        kernels.bind(self.lib)  # restype/argtypes of every kernel, from the manifest

    def _call(self, name: str, *args) -> None:
        status = getattr(self.lib, name)(*args)
        if status != TABULA_OK:
            raise KernelError(name, status)

    # --- scalar ------------------------------------------------------------------------------
    def apply_scale_32(self, value: int, multiplier: int, shift: int) -> int:
        return int(self.lib.tabula_apply_scale_32(value, multiplier, shift))

    # --- window ops ----------------------------------------------------------------------------
    @staticmethod
    def window(x_shape, out_hw, kernel, stride, dilation, pad) -> Window:
        n, h, w, c = x_shape
        return Window(n, h, w, c, out_hw[0], out_hw[1], kernel[0], kernel[1], stride[0], stride[1],
                      dilation[0], dilation[1], pad[0], pad[2])

    def conv2d(self, x, w, b, *, pad, stride, dilation, input_zp, weight_zp, out_hw=None, requant=None) -> np.ndarray:
        """x [N,H,W,Cin] int8, w [Cout,KH,KW,Cin] int8, b [Cout] int32 or None; pad [t,b,l,r].
        An int16 ``x`` calls tabula_conv2d_s16 (int64 bias/output; ``input_zp`` must be 0 here).
        ``requant`` (a block packed by :func:`tabula.requant.pack`): the fused epilogue, int8 / int16 out."""
        if np.asarray(x).dtype == np.int16:
            return self._conv2d_s16(x, w, b, pad=pad, stride=stride, dilation=dilation, input_zp=input_zp,
                                    weight_zp=weight_zp, out_hw=out_hw, requant=requant)
        x, w = _c(x, np.int8), _c(w, np.int8)
        b = None if b is None else _c(b, np.int32)
        n, h, wd, _ = x.shape
        cout, kh, kw, _ = w.shape
        if out_hw is None:
            out_hw = ((h + pad[0] + pad[1] - dilation[0] * (kh - 1) - 1) // stride[0] + 1,
                      (wd + pad[2] + pad[3] - dilation[1] * (kw - 1) - 1) // stride[1] + 1)
        win = self.window(x.shape, out_hw, (kh, kw), stride, dilation, pad)
        rq = None if requant is None else _c(requant, np.int32)
        out = _out((n, out_hw[0], out_hw[1], cout), np.int32 if rq is None else np.int8)
        self._call("tabula_conv2d_s8", C.byref(win), cout, _ptr(x, _i8p), input_zp, _ptr(w, _i8p), weight_zp,
                   _ptr(b, _i32p), _ptr(rq, _rqp), out.ctypes.data_as(C.c_void_p))
        return out

    def conv2d_folded(self, x, w, b, *, pad, stride, dilation, pad_value, out_hw=None, requant=None) -> np.ndarray:
        """tabula_conv2d_s8_folded: x [N,H,W,Cin] int8, w [Cout,KH,KW,Cin] int8 (symmetric), b [Cout]
        int32 (the folded bias) or None; padded taps read as ``pad_value``."""
        x, w = _c(x, np.int8), _c(w, np.int8)
        b = None if b is None else _c(b, np.int32)
        n, h, wd, _ = x.shape
        cout, kh, kw, _ = w.shape
        if out_hw is None:
            out_hw = ((h + pad[0] + pad[1] - dilation[0] * (kh - 1) - 1) // stride[0] + 1,
                      (wd + pad[2] + pad[3] - dilation[1] * (kw - 1) - 1) // stride[1] + 1)
        win = self.window(x.shape, out_hw, (kh, kw), stride, dilation, pad)
        rq = None if requant is None else _c(requant, np.int32)
        out = _out((n, out_hw[0], out_hw[1], cout), np.int32 if rq is None else np.int8)
        self._call("tabula_conv2d_s8_folded", C.byref(win), cout, _ptr(x, _i8p), pad_value, _ptr(w, _i8p),
                   _ptr(b, _i32p), _ptr(rq, _rqp), out.ctypes.data_as(C.c_void_p))
        return out

    def _conv2d_s16(self, x, w, b, *, pad, stride, dilation, input_zp, weight_zp, out_hw, requant=None) -> np.ndarray:
        if input_zp != 0:
            raise ValueError("tabula_conv2d_s16 has no input zero point (int16 is symmetric)")
        x, w = _c(x, np.int16), _c(w, np.int8)
        b = None if b is None else _c(b, np.int64)
        n, h, wd, _ = x.shape
        cout, kh, kw, _ = w.shape
        if out_hw is None:
            out_hw = ((h + pad[0] + pad[1] - dilation[0] * (kh - 1) - 1) // stride[0] + 1,
                      (wd + pad[2] + pad[3] - dilation[1] * (kw - 1) - 1) // stride[1] + 1)
        win = self.window(x.shape, out_hw, (kh, kw), stride, dilation, pad)
        rq = None if requant is None else _c(requant, np.int32)
        out = _out((n, out_hw[0], out_hw[1], cout), np.int64 if rq is None else np.int16)
        self._call("tabula_conv2d_s16", C.byref(win), cout, _ptr(x, _i16p), _ptr(w, _i8p), weight_zp,
                   _ptr(b, _i64p), _ptr(rq, _rqp), out.ctypes.data_as(C.c_void_p))
        return out

    def depthwise_conv2d(self, x, w, b, *, pad, stride, dilation, input_zp, weight_zp, out_hw=None,
                         requant=None) -> np.ndarray:
        """x [N,H,W,C] int8 (tabula_depthwise_conv2d_s8, int32 bias/output) or int16 (_s16, int64
        bias/output, ``input_zp`` must be 0); w [KH,KW,C,M] int8; b [C*M] or None; pad [t,b,l,r].
        ``requant``: the fused epilogue's block, int8 / int16 out."""
        wide = np.asarray(x).dtype == np.int16
        if wide and input_zp != 0:
            raise ValueError("tabula_depthwise_conv2d_s16 has no input zero point (int16 is symmetric)")
        xt, xp, acc, accp = (np.int16, _i16p, np.int64, _i64p) if wide else (np.int8, _i8p, np.int32, _i32p)
        x, w = _c(x, xt), _c(w, np.int8)
        b = None if b is None else _c(b, acc)
        n, h, wd, c = x.shape
        kh, kw, _, m = w.shape
        if out_hw is None:
            out_hw = ((h + pad[0] + pad[1] - dilation[0] * (kh - 1) - 1) // stride[0] + 1,
                      (wd + pad[2] + pad[3] - dilation[1] * (kw - 1) - 1) // stride[1] + 1)
        win = self.window(x.shape, out_hw, (kh, kw), stride, dilation, pad)
        rq = None if requant is None else _c(requant, np.int32)
        out = _out((n, out_hw[0], out_hw[1], c * m), acc if rq is None else (np.int16 if wide else np.int8))
        zp = () if wide else (input_zp,)
        self._call(f"tabula_depthwise_conv2d_{'s16' if wide else 's8'}", C.byref(win), m, _ptr(x, xp), *zp,
                   _ptr(w, _i8p), weight_zp, _ptr(b, accp), _ptr(rq, _rqp), out.ctypes.data_as(C.c_void_p))
        return out

    def _pool(self, op: str, x, kernel, stride, pad, dilation, *zps) -> np.ndarray:
        x = np.asarray(x, order="C")
        if x.dtype not in (np.int8, np.int16):
            raise TypeError(f"no C {op} for {x.dtype}")
        typ, sfx = _PTR[x.dtype]
        n, h, w, c = x.shape
        out_hw = ((h + pad[0] + pad[1] - kernel[0]) // stride[0] + 1, (w + pad[2] + pad[3] - kernel[1]) // stride[1] + 1)
        win = self.window(x.shape, out_hw, kernel, stride, dilation, pad)
        out = _out((n, out_hw[0], out_hw[1], c), x.dtype)
        name = f"tabula_{op}_{sfx}"
        self._call(name, C.byref(win), _ptr(x, typ), *zps, _ptr(out, typ))
        return out

    def max_pool2d(self, x, *, kernel, stride, pad, dilation=(1, 1)) -> np.ndarray:
        """int8 or int16 x [N,H,W,C] (the dtype picks tabula_max_pool2d_s8 / _s16)."""
        return self._pool("max_pool2d", x, kernel, stride, pad, dilation)

    def avg_pool2d(self, x, *, kernel, stride, pad, input_zp=0, output_zp=0, dilation=(1, 1)) -> np.ndarray:
        """int8 or int16 x [N,H,W,C] (the dtype picks tabula_avg_pool2d_s8 / _s16)."""
        return self._pool("avg_pool2d", x, kernel, stride, pad, dilation, input_zp, output_zp)

    # --- dense / elementwise ------------------------------------------------------------------
    def fully_connected(self, x, w, b, *, input_zp, weight_zp, requant=None) -> np.ndarray:
        """x [N,Cin] int8 (or int16: tabula_fully_connected_s16, int64 bias/output, input_zp 0).
        ``requant`` (:func:`tabula.requant.pack`): the fused epilogue, int8 / int16 out."""
        rq = None if requant is None else _c(requant, np.int32)
        if np.asarray(x).dtype == np.int16:
            if input_zp != 0:
                raise ValueError("tabula_fully_connected_s16 has no input zero point (int16 is symmetric)")
            x, w = _c(x, np.int16), _c(w, np.int8)
            b = None if b is None else _c(b, np.int64)
            out = _out((x.shape[0], w.shape[0]), np.int64 if rq is None else np.int16)
            self._call("tabula_fully_connected_s16", x.shape[0], x.shape[1], w.shape[0], _ptr(x, _i16p),
                       _ptr(w, _i8p), weight_zp, _ptr(b, _i64p), _ptr(rq, _rqp), out.ctypes.data_as(C.c_void_p))
            return out
        x, w = _c(x, np.int8), _c(w, np.int8)
        b = None if b is None else _c(b, np.int32)
        out = _out((x.shape[0], w.shape[0]), np.int32 if rq is None else np.int8)
        self._call("tabula_fully_connected_s8", x.shape[0], x.shape[1], w.shape[0], _ptr(x, _i8p), input_zp,
                   _ptr(w, _i8p), weight_zp, _ptr(b, _i32p), _ptr(rq, _rqp), out.ctypes.data_as(C.c_void_p))
        return out

    def matmul(self, a, b, *, a_zp=0, b_zp=0) -> np.ndarray:
        """a [N,H,C], b [N,C,W] both int8 (tabula_matmul_s8 -> int32) or both int16 (tabula_matmul_s16 ->
        int64 holding int48)."""
        a, b = np.asarray(a, order="C"), np.asarray(b, order="C")
        if a.dtype != b.dtype or a.dtype not in (np.int8, np.int16):
            raise TypeError(f"no C MATMUL for {a.dtype} x {b.dtype}")
        typ, sfx = _PTR[a.dtype]
        n, h, c = a.shape
        w = b.shape[2]
        acc = np.int32 if a.dtype == np.int8 else np.int64
        out = _out((n, h, w), acc)
        self._call(f"tabula_matmul_{sfx}", n, h, c, w, _ptr(a, typ), a_zp, _ptr(b, typ), b_zp, _ptr(out, _PTR[np.dtype(acc)][0]))
        return out

    def rescale(self, x, *, input_zp, output_zp, multiplier, shift, output_dtype="int8") -> np.ndarray:
        """``x`` [..., C] -> ``output_dtype``; the dtypes pick ``tabula_rescale_<in>_<out>`` (int64 input:
        the scale32=false kernel).  Per-channel when len(multiplier) > 1."""
        x = np.asarray(x, order="C")
        m, s = _c(np.atleast_1d(multiplier), np.int32), _c(np.atleast_1d(shift), np.int32)
        per_channel = int(m.size > 1)
        channels = x.shape[-1] if (per_channel and x.ndim) else 1
        out = _out(x.shape, output_dtype)
        (ip, isfx), (op, osfx) = _PTR[x.dtype], _PTR[out.dtype]
        name = f"tabula_rescale_{isfx}_{osfx}"
        if not hasattr(self.lib, name):
            raise TypeError(f"no C RESCALE {x.dtype} -> {output_dtype}")
        self._call(name, _ptr(x, ip), x.size, channels, input_zp, output_zp, _ptr(m, _i32p), _ptr(s, _i32p), per_channel,
                   _ptr(out, op))
        return out

    def apply_scale_16(self, value: int, multiplier: int, shift: int) -> int:
        return int(self.lib.tabula_apply_scale_16(value, multiplier, shift))

    def clamp(self, x, min_val, max_val) -> np.ndarray:
        """int8 or int16 ``x`` (tabula_clamp_s8 / _s16)."""
        x = np.asarray(x, order="C")
        typ, sfx = _PTR[x.dtype]
        out = _out(x.shape, x.dtype)
        self._call(f"tabula_clamp_{sfx}", _ptr(x, typ), x.size, min_val, max_val, _ptr(out, typ))
        return out

    def _binary(self, name: str, a, b, *extra) -> np.ndarray:
        a, b = _c(a, np.int32), _c(b, np.int32)
        if a.shape != b.shape:
            raise ValueError(f"{name}: shapes {a.shape} and {b.shape} differ")
        out = _out(a.shape, a.dtype)
        self._call(name, _ptr(a, _i32p), _ptr(b, _i32p), a.size, *extra, _ptr(out, _i32p))
        return out

    def add(self, a, b) -> np.ndarray:
        return self._binary("tabula_add_s32", a, b)

    def sub(self, a, b) -> np.ndarray:
        return self._binary("tabula_sub_s32", a, b)

    def mul(self, a, b, shift=0) -> np.ndarray:
        return self._binary("tabula_mul_s32", a, b, shift)

    def add_requant(self, a, b, params) -> np.ndarray:
        """``tabula_add_requant_<t>``: int8 or int16 ``a`` and ``b`` of one shape, ``params`` int32 [12]."""
        a = np.ascontiguousarray(a)
        b = _c(b, a.dtype)
        if a.shape != b.shape or a.dtype not in (np.int8, np.int16):
            raise ValueError(f"add_requant: {a.dtype}{a.shape} and {b.dtype}{b.shape}")
        sfx, typ = ("s8", _i8p) if a.dtype == np.int8 else ("s16", _i16p)
        p = _c(params, np.int32)
        out = _out(a.shape, a.dtype)
        self._call(f"tabula_add_requant_{sfx}", _ptr(a, typ), _ptr(b, typ), a.size, _ptr(p, _i32p), _ptr(out, typ))
        return out

    def _bcast(self, name: str, a, b, *extra) -> np.ndarray:
        """``tabula_<op>_bcast_s32`` over int32 ``a`` and ``b`` of one rank (shapes broadcast as TOSA)."""
        a, b = _c(a, np.int32), _c(b, np.int32)
        if a.ndim != b.ndim:
            raise ValueError(f"{name}: ranks {a.ndim} and {b.ndim} differ")
        out = _out(tuple(y if x == 1 else x for x, y in zip(a.shape, b.shape)), np.int32)
        sa, sb = _c(a.shape, np.int32), _c(b.shape, np.int32)
        self._call(name, _ptr(a, _i32p), _ptr(sa, _i32p), _ptr(b, _i32p), _ptr(sb, _i32p), a.ndim, *extra,
                   _ptr(out, _i32p))
        return out

    def add_bcast(self, a, b) -> np.ndarray:
        return self._bcast("tabula_add_bcast_s32", a, b)

    def sub_bcast(self, a, b) -> np.ndarray:
        return self._bcast("tabula_sub_bcast_s32", a, b)

    def mul_bcast(self, a, b, shift=0) -> np.ndarray:
        return self._bcast("tabula_mul_bcast_s32", a, b, shift)

    def concat(self, xs, axis) -> np.ndarray:
        """Join arrays of one dtype along ``axis`` with tabula_concat (outer blocks x inner bytes)."""
        xs = [np.ascontiguousarray(x) for x in xs]
        shape = list(xs[0].shape)
        shape[axis] = sum(x.shape[axis] for x in xs)
        out = _out(shape, xs[0].dtype)
        outer = int(np.prod(shape[:axis], dtype=np.int64))
        inner = _c([x.nbytes // outer if outer else 0 for x in xs], np.int32)
        ptrs = (C.c_void_p * len(xs))(*[x.ctypes.data for x in xs])
        self._call("tabula_concat", ptrs, _ptr(inner, _i32p), len(xs), outer, out.ctypes.data)
        return out

    def table16(self, x, plan) -> np.ndarray:
        """int16 x + a ``qmath.Table16Plan`` (or one 513-entry table) -> int16: the fused
        ``tabula_table16_s16`` (tables only, centred terms included) or ``tabula_table16_ramps_s16``
        (ramps, a product step)."""
        from tabula import qmath

        if not isinstance(plan, qmath.Table16Plan):
            plan = qmath.Table16Plan((qmath.Table16Term(0, np.asarray(plan)),))
        x = _c(x, np.int16)
        out = _out(x.shape, np.int16)
        n = len(plan.terms)
        zoom = _c([t.zoom for t in plan.terms] or [0], np.int32)
        centre = _c([t.centre for t in plan.terms] or [0], np.int32)
        his = [_c(t.hi, np.int16) for t in plan.terms]
        los = [None if t.lo is None else _c(t.lo, np.int16) for t in plan.terms]
        hi_arr = (_i16p * max(n, 1))(*[_ptr(h, _i16p) for h in his])
        lo_arr = (_i16p * n)(*[_i16p() if lo is None else _ptr(lo, _i16p) for lo in los]) if plan.split else None
        if not plan.ramps and plan.product is None:
            self._call("tabula_table16_s16", _ptr(x, _i16p), x.size, n, _ptr(zoom, _i32p), _ptr(centre, _i32p), hi_arr,
                       lo_arr, _ptr(out, _i16p))
            return out
        ramps = _c([v for r in plan.ramps for v in (r.lo, r.hi, r.multiplier, r.shift, r.sign)] or [0], np.int32)
        if plan.product is not None:
            final = _c([plan.product.mul_shift, plan.product.multiplier, plan.product.shift], np.int32)
        else:
            final = _c([-1, 1 << 30, 30 + plan.frac_bits], np.int32)
        self._call("tabula_table16_ramps_s16", _ptr(x, _i16p), x.size, n, _ptr(zoom, _i32p), _ptr(centre, _i32p),
                   hi_arr, lo_arr, len(plan.ramps), _ptr(ramps, _i32p) if plan.ramps else None, _ptr(final, _i32p),
                   _ptr(out, _i16p))
        return out

    def table(self, x, table) -> np.ndarray:
        """int8 x + 256-entry int8 table -> int8; int16 x + 513-entry int16 table -> int32 (16.7)."""
        if np.asarray(x).dtype == np.int16:
            x, t = _c(x, np.int16), _c(table, np.int16)
            out = _out(x.shape, np.int32)
            self._call("tabula_table_s16", _ptr(x, _i16p), x.size, _ptr(t, _i16p), _ptr(out, _i32p))
            return out
        x, t = _c(x, np.int8), _c(table, np.int8)
        out = _out(x.shape, x.dtype)
        self._call("tabula_table_s8", _ptr(x, _i8p), x.size, _ptr(t, _i8p), _ptr(out, _i8p))
        return out

    def slice(self, x, start, size) -> np.ndarray:
        """``tabula_slice`` of any dtype, rank 1..6."""
        x = np.asarray(x, order="C")
        shape, st, sz = _c(x.shape, np.int32), _c(start, np.int32), _c(size, np.int32)
        out = _out(tuple(size), x.dtype)
        self._call("tabula_slice", x.ctypes.data, _ptr(shape, _i32p), _ptr(st, _i32p), _ptr(sz, _i32p), x.ndim,
                   x.itemsize, out.ctypes.data)
        return out

    def pad(self, x, pad_before, pad_after, pad_value) -> np.ndarray:
        """``tabula_pad`` of any dtype, rank 1..6."""
        x = np.asarray(x, order="C")
        shape, pb, pa = _c(x.shape, np.int32), _c(pad_before, np.int32), _c(pad_after, np.int32)
        value = np.array([pad_value], dtype=x.dtype)
        out = _out(tuple(d + b + a for d, b, a in zip(x.shape, pad_before, pad_after)), x.dtype)
        self._call("tabula_pad", x.ctypes.data, _ptr(shape, _i32p), _ptr(pb, _i32p), _ptr(pa, _i32p), x.ndim,
                   x.itemsize, value.ctypes.data, out.ctypes.data)
        return out

    def resize_nearest(self, x, scale) -> np.ndarray:
        """``tabula_resize_nearest`` of an NHWC tensor, any dtype."""
        x = np.asarray(x, order="C")
        n, h, w, c = x.shape
        out = _out((n, h * scale[0], w * scale[1], c), x.dtype)
        self._call("tabula_resize_nearest", x.ctypes.data, n, h, w, c, scale[0], scale[1], x.itemsize, out.ctypes.data)
        return out

    def transpose(self, x, perms) -> np.ndarray:
        x = np.asarray(x, order="C")
        shape, p = _c(x.shape, np.int32), _c(perms, np.int32)
        out = _out(tuple(x.shape[i] for i in perms), x.dtype)
        self._call("tabula_transpose", x.ctypes.data, _ptr(shape, _i32p), _ptr(p, _i32p), x.ndim, x.itemsize,
                   out.ctypes.data)
        return out


    # --- reductions, TILE, INTDIV, the fused softmax ----------------------------------------------
    @staticmethod
    def _around(shape, axis: int) -> tuple[int, int, int]:
        shape = [int(d) for d in shape]
        axis %= len(shape)
        return int(np.prod(shape[:axis], dtype=np.int64)), shape[axis], int(np.prod(shape[axis + 1:], dtype=np.int64))

    def _reduce(self, op: str, x, axis: int) -> np.ndarray:
        x = np.asarray(x, order="C")
        typ, sfx = _PTR[x.dtype]
        outer, n, inner = self._around(x.shape, axis)
        shape = list(x.shape)
        shape[axis] = 1
        out = _out(tuple(shape), x.dtype)
        self._call(f"tabula_{op}_{sfx}", _ptr(x, typ), outer, n, inner, _ptr(out, typ))
        return out

    def reduce_max(self, x, axis: int) -> np.ndarray:
        """int8 / int16 / int32 ``x`` (tabula_reduce_max_s8 / _s16 / _s32), keeping the reduced dim as 1."""
        return self._reduce("reduce_max", x, axis)

    def reduce_sum(self, x, axis: int) -> np.ndarray:
        """int32 ``x`` (tabula_reduce_sum_s32), keeping the reduced dim as 1."""
        return self._reduce("reduce_sum", _c(x, np.int32), axis)

    def tile(self, x, multiples) -> np.ndarray:
        """``tabula_tile`` of any dtype, rank 1..6."""
        x = np.asarray(x, order="C")
        shape, m = _c(x.shape, np.int32), _c(multiples, np.int32)
        out = _out(tuple(d * k for d, k in zip(x.shape, multiples)), x.dtype)
        self._call("tabula_tile", x.ctypes.data, _ptr(shape, _i32p), _ptr(m, _i32p), x.ndim, x.itemsize, out.ctypes.data)
        return out

    def intdiv(self, a, b) -> np.ndarray:
        return self._binary("tabula_intdiv_s32", a, b)

    def softmax(self, x, axis: int, exp_hi, exp_lo, split_bits: int, exp_shift: int, scales, output_zp: int) -> np.ndarray:
        """The fused ``tabula_softmax_s8`` / ``_s16`` (by ``x``'s dtype) along ``axis``; ``exp_lo`` None
        for one level."""
        x = np.asarray(x, order="C")
        typ, sfx = _PTR[x.dtype]
        outer, n, inner = self._around(x.shape, axis)
        hi = _c(exp_hi, np.int32)
        lo = None if exp_lo is None else _c(exp_lo, np.int32)
        sc = _c(scales, np.int32)
        out = _out(x.shape, x.dtype)
        self._call(f"tabula_softmax_{sfx}", _ptr(x, typ), outer, n, inner, _ptr(hi, _i32p), _ptr(lo, _i32p), split_bits,
                   exp_shift, _ptr(sc, _i32p), output_zp, _ptr(out, typ))
        return out
