"""Build the C kernels (firmware_templates/runtime/kernels/*.c) into a host shared library and wrap
them with ctypes, taking and returning numpy arrays.  Used by tests/ops through the ``kernel_lib``
fixture (tests/conftest.py).  Each wrapper raises :class:`KernelError` on a non-zero status."""
from __future__ import annotations

import ctypes as C
import shutil
import subprocess
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RUNTIME = ROOT / "firmware_templates" / "runtime"
KERNELS = RUNTIME / "kernels"
CFLAGS = ["-O2", "-shared", "-fPIC", "-std=c99", "-Wall", "-Wextra", "-Werror", "-I", str(RUNTIME)]

TABULA_OK, TABULA_ERR_ARG = 0, 1

_i8p = C.POINTER(C.c_int8)
_i32p = C.POINTER(C.c_int32)


class KernelError(RuntimeError):
    """A kernel returned a status other than TABULA_OK."""

    def __init__(self, name: str, status: int):
        super().__init__(f"{name} returned status {status}")
        self.status = status


class Window(C.Structure):
    """ctypes mirror of ``tabula_window`` (tabula_kernels.h)."""

    _fields_ = [
        (f, C.c_int32)
        for f in ("n", "h", "w", "c", "out_h", "out_w", "kernel_h", "kernel_w", "stride_y", "stride_x",
                  "dilation_y", "dilation_x", "pad_top", "pad_left")
    ]


def compiler() -> str | None:
    """The host C compiler (``cc``), or None when absent."""
    return shutil.which("cc")


def build(out_dir: Path) -> Path:
    """Compile every kernel source into ``out_dir/libtabula_kernels.so``; raise with the compiler
    output on failure."""
    cc = compiler()
    if cc is None:
        raise FileNotFoundError("no host C compiler 'cc' on PATH")
    sources = sorted(str(p) for p in KERNELS.glob("*.c"))
    lib = Path(out_dir) / "libtabula_kernels.so"
    r = subprocess.run([cc, *CFLAGS, "-o", str(lib), *sources], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"building the kernels failed:\n{r.stderr}")
    return lib


def _ptr(a: np.ndarray | None, typ):
    return None if a is None else a.ctypes.data_as(typ)


def _c(a, dtype) -> np.ndarray:
    return np.asarray(a, dtype=dtype, order="C")


class KernelLib:
    """numpy-facing wrappers over the C kernels; shapes follow the IR (NHWC, OHWI)."""

    def __init__(self, path: Path):
        self.path = path
        L = self.lib = C.CDLL(str(path))
        L.tabula_apply_scale_32.restype = C.c_int64
        L.tabula_apply_scale_32.argtypes = [C.c_int32, C.c_int32, C.c_int32]
        win_p = C.POINTER(Window)
        i32 = C.c_int32
        sig = {
            "tabula_conv2d_s8": [win_p, i32, _i8p, i32, _i8p, i32, _i32p, _i32p],
            "tabula_fully_connected_s8": [i32, i32, i32, _i8p, i32, _i8p, i32, _i32p, _i32p],
            "tabula_rescale_s32_s8": [_i32p, i32, i32, i32, i32, _i32p, _i32p, i32, _i8p],
            "tabula_rescale_s8_s8": [_i8p, i32, i32, i32, i32, _i32p, _i32p, i32, _i8p],
            "tabula_table_s8": [_i8p, i32, _i8p, _i8p],
            "tabula_max_pool2d_s8": [win_p, _i8p, _i8p],
            "tabula_transpose": [C.c_void_p, _i32p, _i32p, i32, i32, C.c_void_p],
        }
        for name, args in sig.items():
            fn = getattr(L, name)
            fn.argtypes, fn.restype = args, C.c_int

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

    def conv2d(self, x, w, b, *, pad, stride, dilation, input_zp, weight_zp, out_hw=None) -> np.ndarray:
        """x [N,H,W,Cin] int8, w [Cout,KH,KW,Cin] int8, b [Cout] int32 or None; pad [t,b,l,r]."""
        x, w = _c(x, np.int8), _c(w, np.int8)
        b = None if b is None else _c(b, np.int32)
        n, h, wd, _ = x.shape
        cout, kh, kw, _ = w.shape
        if out_hw is None:
            out_hw = ((h + pad[0] + pad[1] - dilation[0] * (kh - 1) - 1) // stride[0] + 1,
                      (wd + pad[2] + pad[3] - dilation[1] * (kw - 1) - 1) // stride[1] + 1)
        win = self.window(x.shape, out_hw, (kh, kw), stride, dilation, pad)
        out = np.empty((n, out_hw[0], out_hw[1], cout), dtype=np.int32)
        self._call("tabula_conv2d_s8", C.byref(win), cout, _ptr(x, _i8p), input_zp, _ptr(w, _i8p), weight_zp,
                   _ptr(b, _i32p), _ptr(out, _i32p))
        return out

    def max_pool2d(self, x, *, kernel, stride, pad, dilation=(1, 1)) -> np.ndarray:
        x = _c(x, np.int8)
        n, h, w, c = x.shape
        out_hw = ((h + pad[0] + pad[1] - kernel[0]) // stride[0] + 1, (w + pad[2] + pad[3] - kernel[1]) // stride[1] + 1)
        win = self.window(x.shape, out_hw, kernel, stride, dilation, pad)
        out = np.empty((n, out_hw[0], out_hw[1], c), dtype=np.int8)
        self._call("tabula_max_pool2d_s8", C.byref(win), _ptr(x, _i8p), _ptr(out, _i8p))
        return out

    # --- dense / elementwise ------------------------------------------------------------------
    def fully_connected(self, x, w, b, *, input_zp, weight_zp) -> np.ndarray:
        x, w = _c(x, np.int8), _c(w, np.int8)
        b = None if b is None else _c(b, np.int32)
        out = np.empty((x.shape[0], w.shape[0]), dtype=np.int32)
        self._call("tabula_fully_connected_s8", x.shape[0], x.shape[1], w.shape[0], _ptr(x, _i8p), input_zp,
                   _ptr(w, _i8p), weight_zp, _ptr(b, _i32p), _ptr(out, _i32p))
        return out

    def rescale(self, x, *, input_zp, output_zp, multiplier, shift) -> np.ndarray:
        """int32 or int8 ``x`` [..., C] -> int8; per-channel when len(multiplier) > 1."""
        x = np.asarray(x, order="C")
        m, s = _c(np.atleast_1d(multiplier), np.int32), _c(np.atleast_1d(shift), np.int32)
        per_channel = int(m.size > 1)
        channels = x.shape[-1] if (per_channel and x.ndim) else 1
        out = np.empty(x.shape, dtype=np.int8)
        if x.dtype == np.int32:
            name, xp = "tabula_rescale_s32_s8", _ptr(x, _i32p)
        elif x.dtype == np.int8:
            name, xp = "tabula_rescale_s8_s8", _ptr(x, _i8p)
        else:
            raise TypeError(f"no C RESCALE for {x.dtype}")
        self._call(name, xp, x.size, channels, input_zp, output_zp, _ptr(m, _i32p), _ptr(s, _i32p), per_channel,
                   _ptr(out, _i8p))
        return out

    def table(self, x, table) -> np.ndarray:
        x, t = _c(x, np.int8), _c(table, np.int8)
        out = np.empty_like(x)
        self._call("tabula_table_s8", _ptr(x, _i8p), x.size, _ptr(t, _i8p), _ptr(out, _i8p))
        return out

    def transpose(self, x, perms) -> np.ndarray:
        x = np.asarray(x, order="C")
        shape, p = _c(x.shape, np.int32), _c(perms, np.int32)
        out = np.empty(tuple(x.shape[i] for i in perms), dtype=x.dtype)
        self._call("tabula_transpose", x.ctypes.data, _ptr(shape, _i32p), _ptr(p, _i32p), x.ndim, x.itemsize,
                   out.ctypes.data)
        return out
