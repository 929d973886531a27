"""Run single C kernel calls on an emulated Arm core, with the host library's call signatures.

:class:`DeviceKernelLib` is :class:`tabula.harness.host.KernelLib` (same methods, same numpy arguments,
same return values) whose kernel calls run on a board under QEMU instead of a host shared library, so
one test case can run on the host and on the device and be compared::

    dev = DeviceKernelLib("corstone300", work_dir=tmp)            # Cortex-M55, Helium paths
    y = dev.conv2d(x, w, b, pad=(1, 1, 1, 1), stride=(1, 1), dilation=(1, 1), input_zp=-3, weight_zp=0)
    dev.last.instructions                                        # of that one call

    with dev.batch() as runs:                                     # many calls, one ELF, one QEMU run
        ys = [dev.fully_connected(x, w, b, input_zp=0, weight_zp=0) for x in xs]
    # ys are filled when the block ends; runs[i] is the i-th call's :class:`Run`

How it works.  The kernel library (every source of ``firmware_templates/kernels/manifest.toml``, the
manifest-generated ``tabula_kernels.h``) and the board's own C (``board.toml`` ``shared``/``sources``:
startup, UART, SysTick, semihosting exit) are compiled once per target into ``<work_dir>/<target>/``
(a static archive and objects), with the board's cflags, the common flags and defines exactly as
``toolchain/arm_gnu.py`` sets them (``TABULA_PORTABLE_ONLY=1`` for a portable target,
``TABULA_NO_ASM=1`` for one whose ISA paths run the C twins of their assembly loops), and linked with
the board's linker script and the ``tabula_memory.ld`` generated from its ``[memory]``.  Each call
(or batch of calls) becomes a small ``main.c`` that holds the inputs as C arrays, calls the kernel
(optionally once more as a warm-up first), reads ``tabula_board_ticks()`` (SysTick) around the call and
prints the status, the ticks and the output bytes in hex on UART0; QEMU runs it with ``-icount
shift=<board.toml>`` under a timeout.  With ``-icount shift=0`` one instruction is one ns of virtual
time, so ``instructions = (ticks - overhead) * 1e9 / tick_hz``: exact up to one tick (31.25
instructions on corstone300 at 32 MHz, 40 on mps2_an386 at 25 MHz); ``overhead`` is the ticks of an
empty measurement, taken once per program.

Arguments follow the manifest's prototype of the kernel, as on the host (the rules of
:mod:`tabula.harness.host`): numpy arrays, None, a :data:`~tabula.harness.host.Window`, lists of arrays,
integers.  Pointer parameters without ``const`` are outputs: on the device they start filled with 0x5A
(as :func:`tabula.harness.host.out_like` fills them on the host) and are copied back into the given
array after the run.  A status other than TABULA_OK raises :class:`tabula.harness.host.KernelError`,
like the host library.

Errors: :class:`DeviceError` (a RuntimeError) for a failed compile or link (with the compiler's
output), a QEMU timeout or crash (exit code, the UART transcript's tail), an argument that does not fit
its parameter, or a method of the host library that has no device form (``apply_scale_32``, ...).
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import kernels, memory
from ..boards import C_STD, COMMON_CFLAGS, COMMON_LINKFLAGS, load_board, repo_root, shared_dir
from .host import FILL, TABULA_OK, KernelError, KernelLib, Window

GCC = "arm-none-eabi-gcc"
AR = "arm-none-eabi-ar"
QEMU = "qemu-system-arm"
RUNTIME = repo_root() / "firmware_templates" / "runtime"

#: The targets the kernel paths are tested on: name -> (board, portable, noasm).  ``m55`` runs the Helium
#: (MVE) paths, ``m55-portable`` the same core with ``-DTABULA_PORTABLE_ONLY=1``, ``m55-noasm`` the
#: Helium paths with the C twins of their assembly loops (``-DTABULA_NO_ASM=1``); ``m4`` a Cortex-M4
#: (DSP extension, no Helium), ``m4-portable`` and ``m4-noasm`` likewise; ``m33`` a Cortex-M33 (DSP).
TARGETS = {"m55": ("corstone300", False, False), "m55-portable": ("corstone300", True, False),
           "m55-noasm": ("corstone300", False, True), "m4": ("mps2_an386", False, False),
           "m4-portable": ("mps2_an386", True, False), "m4-noasm": ("mps2_an386", False, True),
           "m33": ("mps2_an505", False, False)}

#: Bytes of array data per program; a batch holding more is split over several programs (corstone300's
#: ITCM, which holds .rodata, is 512 KiB).
BATCH_BYTES = 192 * 1024


class DeviceError(RuntimeError):
    """The device harness could not build or run a program; the message says what and shows the tool's
    output."""


def missing_tools() -> list[str]:
    """The programs this harness needs that are not on PATH (empty when it can run)."""
    return [t for t in (GCC, AR, QEMU) if shutil.which(t) is None]


@dataclass
class Run:
    """One kernel call on the device: ``name``, ``status`` (``TABULA_OK`` = 0), ``ticks`` of the call
    (SysTick, the empty measurement's overhead taken off), ``instructions`` (from the ticks under
    ``-icount shift=0``; None under another shift) and ``outputs`` (the arrays written back)."""
    name: str
    status: int = -1
    ticks: int = 0
    instructions: int | None = None
    outputs: list[np.ndarray] = field(default_factory=list, repr=False)


@dataclass
class _Arg:
    """One argument rendered for C: ``decl`` (a file-scope definition or ''), ``expr`` (the call's
    argument), ``out`` (an output array to copy back, with its C name) or None."""
    decl: str
    expr: str
    out: tuple[str, np.ndarray] | None = None


def _c_bytes(data: bytes) -> str:
    """A C initializer list of ``data``, 24 bytes per line."""
    hexes = [f"0x{b:02x}" for b in data]
    return ",\n".join("    " + ",".join(hexes[i:i + 24]) for i in range(0, len(hexes), 24))


class _Case:
    """One call to render: kernel ``name`` and its arguments, checked against the manifest."""

    def __init__(self, index: int, kernel: kernels.Kernel, args: tuple):
        if len(args) != len(kernel.params):
            raise DeviceError(f"{kernel.name} takes {len(kernel.params)} arguments ({kernel.prototype}), "
                              f"got {len(args)}")
        self.index, self.kernel, self.run = index, kernel, Run(kernel.name)
        self.args = [self._arg(i, ctype, pname, a) for i, ((ctype, pname), a) in enumerate(zip(kernel.params, args))]
        self.nbytes = sum(a.out[1].nbytes if a.out else 0 for a in self.args) + sum(len(a.decl) // 5 for a in self.args)

    def _arg(self, i: int, ctype: str, pname: str, a) -> _Arg:
        """One argument, normalized by :meth:`KernelLib._normalize`: an integer, None, a Window, a list
        of arrays (``const T *const *``) or a numpy array."""
        cname = f"c{self.index}_{pname}"
        if "*" not in ctype:
            return _Arg("", f"({ctype})({int(a)}LL)")
        if a is None:
            return _Arg("", "NULL")
        if isinstance(a, Window):
            fields = ", ".join(str(int(getattr(a, f))) for f, _ in a._fields_)
            base = ctype.replace("const", "").replace("*", "").strip()
            return _Arg(f"static const {base} {cname} = {{{fields}}};", f"&{cname}")
        if isinstance(a, list):                        # const T *const *: a table of arrays
            return self._arg_table(cname, ctype, a)
        if not isinstance(a, np.ndarray) or not a.flags.c_contiguous:
            raise DeviceError(f"{self.kernel.name}: parameter {pname} ({ctype}) takes a C-contiguous numpy array, "
                              f"got {type(a).__name__}")
        n = max(a.nbytes, 1)
        if ctype.startswith("const"):
            return _Arg(f"static const uint8_t {cname}[{n}] __attribute__((aligned(16))) = {{\n"
                        f"{_c_bytes(a.tobytes()) or '    0'}\n}};", f"(const void *){cname}")
        return _Arg(f"static uint8_t {cname}[{n}] __attribute__((aligned(16)));", f"(void *){cname}", (cname, a))

    def _arg_table(self, cname: str, ctype: str, a: list) -> _Arg:
        """A ``const T *const *`` parameter: a list of arrays (or None)."""
        base = ctype.replace("const", "").replace("*", "").strip()
        decls, items = [], []
        for k, t in enumerate(a):
            if t is None:
                items.append("NULL")
                continue
            decls.append(f"static const uint8_t {cname}_{k}[{max(t.nbytes, 1)}] __attribute__((aligned(16))) = {{\n"
                         f"{_c_bytes(t.tobytes()) or '    0'}\n}};")
            items.append(f"(const {base} *){cname}_{k}")
        decls.append(f"static const {base} *const {cname}[{max(len(items), 1)}] = {{{', '.join(items) or 'NULL'}}};")
        return _Arg("\n".join(decls), cname)

    def call_expr(self) -> str:
        return f"{self.kernel.name}({', '.join(a.expr for a in self.args)})"


class DeviceKernelLib(KernelLib):
    """The op methods of :class:`tabula.harness.host.KernelLib`, run on ``board`` under QEMU.

    ``board``: a folder of ``boards/`` with an ``arm_gnu`` toolchain and a ``[runner.qemu]`` table
    (``corstone300``, ``mps2_an386``, ``mps2_an500``, ``mps2_an505``); ``portable``: build with
    ``TABULA_PORTABLE_ONLY=1``; ``noasm``: with ``TABULA_NO_ASM=1``; ``work_dir``: where the library and the programs are built (a
    temporary folder when None; the library is reused by every call of this object); ``warmup``: call
    each kernel once before the measured call; ``timeout_s``: per QEMU run.  Raises
    :class:`DeviceError` when a tool is missing or the board cannot run under QEMU."""

    def __init__(self, board: str = "corstone300", *, portable: bool = False, noasm: bool = False,
                 work_dir: str | os.PathLike | None = None, warmup: bool = False, timeout_s: float = 120.0):
        gone = missing_tools()
        if gone:
            raise DeviceError(f"{', '.join(gone)} not on PATH: ./bootstrap.sh (apt-get install --no-install-recommends "
                              "gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm)")
        self.board = load_board(board)
        if self.board.toolchain != "arm_gnu" or "qemu" not in self.board.runner:
            raise DeviceError(f"board {board!r} is not an arm_gnu board with a [runner.qemu] table; use one of "
                              f"{sorted({t[0] for t in TARGETS.values()})}")
        self.portable, self.noasm = bool(portable), bool(noasm)
        self.warmup, self.timeout_s = bool(warmup), float(timeout_s)
        self.target = board + ("-portable" if portable else "") + ("-noasm" if noasm else "")
        self._tmp = None
        if work_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="tabula-device-")
            work_dir = self._tmp.name
        self.dir = Path(work_dir) / self.target
        self.path = self.dir
        self.lib = _NoHostLib(self.target)
        self._kernels = {k.name: k for k in kernels.load()}
        self._queue: list[_Case] | None = None
        self._programs = 0
        self.last: Run | None = None
        self._built = False
        self._cflags: list[str] | None = None

    # ---- building --------------------------------------------------------------------------------
    def cflags(self) -> list[str]:
        """The compile flags of every object: common + board cflags + defines (as toolchain/arm_gnu.py)
        + include paths (boards/_shared, the runtime, the generated header, the kernels)."""
        if self._cflags is not None:
            return list(self._cflags)
        sys.path.insert(0, str(repo_root() / "toolchain"))
        try:
            import arm_gnu  # the SCons tool: its _defines is the one list of defines
        finally:
            sys.path.pop(0)
        defines = arm_gnu._defines({"TABULA_PORTABLE": self.portable}, self.board)
        if self.noasm:
            defines.append(("TABULA_NO_ASM", 1))
        dflags = [f"-D{k}={str(v).replace(chr(92) + chr(34), chr(34))}" for k, v in defines]
        self._cflags = [C_STD, *COMMON_CFLAGS, *self.board.cflags, *dflags, "-I", str(shared_dir()), "-I", str(RUNTIME),
                        "-I", str(self.dir / "include"), "-I", str(kernels.kernels_dir())]
        return list(self._cflags)

    def _compile(self, src: Path, obj: Path) -> None:
        r = subprocess.run([GCC, *self.cflags(), "-c", str(src), "-o", str(obj)], capture_output=True, text=True)
        if r.returncode != 0:
            raise DeviceError(f"{self.target}: compiling {src.name} failed:\n{r.stderr}")

    def build(self) -> Path:
        """Compile the kernel library (``libtabula_kernels.a``) and the board objects into
        ``<work_dir>/<target>/`` once (kept while the sources and flags are unchanged: a stamp holds
        their hash); returns that folder.  Raises :class:`DeviceError` with the compiler output."""
        if self._built:
            return self.dir
        srcs = [*kernels.sources(), *self.board.sources]
        h = hashlib.sha256("\0".join(self.cflags()).encode())
        for p in [*srcs, *sorted(kernels.kernels_dir().rglob("*.h")), kernels.manifest_path(), *shared_dir().glob("*")]:
            h.update(p.read_bytes() if p.is_file() else b"")
        stamp = self.dir / "stamp"
        if not (stamp.is_file() and stamp.read_text() == h.hexdigest()):
            (self.dir / "obj").mkdir(parents=True, exist_ok=True)
            kernels.write_header(self.dir / "include" / kernels.HEADER_NAME)
            (self.dir / "ld").mkdir(exist_ok=True)
            (self.dir / "ld" / "tabula_memory.ld").write_text(
                memory.linker_script(self.board.memory, f"boards/{self.board.name}/board.toml"))
            objs = [self.dir / "obj" / (s.stem + ".o") for s in srcs]
            with ThreadPoolExecutor(max_workers=2) as pool:
                list(pool.map(self._compile, srcs, objs))
            lib = self.dir / "libtabula_kernels.a"
            lib.unlink(missing_ok=True)
            r = subprocess.run([AR, "rcs", str(lib), *map(str, objs[:len(kernels.sources())])],
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise DeviceError(f"{self.target}: {AR} failed:\n{r.stderr}")
            stamp.write_text(h.hexdigest())
        self._board_objs = [self.dir / "obj" / (s.stem + ".o") for s in self.board.sources]
        self._built = True
        return self.dir

    # ---- calls -----------------------------------------------------------------------------------
    def call(self, name: str, *args) -> Run:
        """One call of manifest kernel ``name`` with ``args`` (the host library's argument rules).
        Returns its :class:`Run` (filled at once, or when the enclosing :meth:`batch` ends); a non-OK
        status raises KernelError (at the batch's end when queued)."""
        if name not in self._kernels:
            raise DeviceError(f"no kernel {name!r} in {kernels.manifest_path()}")
        k = self._kernels[name]
        queue = self._queue if self._queue is not None else []
        case = _Case(len(queue), k, tuple(self._normalize(k, args)))
        queue.append(case)
        self.last = case.run
        if self._queue is None:
            self._execute(queue)
            _check(queue)
        return case.run

    def status(self, name: str, *args) -> int:
        """The status of one call run at once (not inside :meth:`batch`); no exception for a refused call."""
        if self._queue is not None:
            raise DeviceError("status() runs one call at once: not inside a batch")
        k = self._kernels[name]
        queue = [_Case(0, k, tuple(self._normalize(k, args)))]
        self._execute(queue)
        self.last = queue[0].run
        return queue[0].run.status

    @contextlib.contextmanager
    def batch(self):
        """Queue every kernel call made inside the block and run them at its end in as few programs as
        fit (:data:`BATCH_BYTES` of data each); yields the list of :class:`Run` (filled at the end, in call
        order).  The wrappers' returned arrays are filled at the end too.  Raises KernelError for the
        first call whose status is not TABULA_OK."""
        if self._queue is not None:
            raise DeviceError("batches do not nest")
        self._queue = []
        runs: list[Run] = []
        try:
            yield runs
            queue, self._queue = self._queue, None
            chunk: list[_Case] = []
            for case in queue:
                if chunk and sum(c.nbytes for c in chunk) + case.nbytes > BATCH_BYTES:
                    self._execute(chunk)
                    chunk = []
                case.index = len(chunk)
                chunk.append(case)
            if chunk:
                self._execute(chunk)
            runs.extend(c.run for c in queue)
            _check(queue)
        finally:
            self._queue = None

    # ---- one program -----------------------------------------------------------------------------
    def _main_c(self, cases: list[_Case]) -> str:
        lines = ["/* Generated by tabula.harness.device: kernel calls with SysTick around each. */",
                 "#include <stdint.h>", "#include <stddef.h>", "#include <string.h>", '#include "tabula_board.h"',
                 f'#include "{kernels.HEADER_NAME}"', "",
                 "static void put_str(const char *s) { while (*s) { tabula_board_putc((uint8_t)*s++); } }",
                 "static void put_hex(uint32_t v, int digits)",
                 "{", "    for (int i = digits - 1; i >= 0; i--) { tabula_board_putc((uint8_t)\"0123456789abcdef\"[(v >> (4 * i)) & 0xFu]); }",
                 "}",
                 "static void put_bytes(const uint8_t *p, uint32_t n)",
                 "{", "    for (uint32_t i = 0; i < n; i++) { put_hex(p[i], 2); }", "    put_str(\"\\n\");", "}", ""]
        for c in cases:
            lines += [a.decl for a in c.args if a.decl]
        lines += ["", "int main(void)", "{", "    tabula_board_init();",
                  "    uint32_t t0 = tabula_board_ticks();", "    uint32_t t1 = tabula_board_ticks();",
                  "    const uint32_t overhead = t1 - t0;", "    tabula_status st;",
                  "    put_str(\"@O \"); put_hex(overhead, 8); put_str(\"\\n\");"]
        for c in cases:
            outs = [a.out[0] for a in c.args if a.out]
            fill = [f"    memset({o}, {FILL:#x}, sizeof {o});" for o in outs]
            lines += [f"    /* case {c.index}: {c.kernel.name} */", *fill]
            if self.warmup:
                lines += [f"    (void){c.call_expr()};"]
            lines += ["    t0 = tabula_board_ticks();", f"    st = {c.call_expr()};", "    t1 = tabula_board_ticks();",
                      f"    put_str(\"@T {c.index} \"); put_hex((uint32_t)st, 8); put_str(\" \"); put_hex(t1 - t0, 8);"
                      " put_str(\"\\n\");"]
            for k, o in enumerate(outs):
                lines += [f"    put_str(\"@D {c.index} {k} \"); put_bytes({o}, sizeof {o});"]
        lines += ["    put_str(\"@END\\n\");", "    return 0;", "}", ""]
        return "\n".join(lines)

    def _execute(self, cases: list[_Case]) -> None:
        self.build()
        self._programs += 1
        pdir = self.dir / f"prog{self._programs}"
        pdir.mkdir(exist_ok=True)
        (pdir / "main.c").write_text(self._main_c(cases))
        elf = pdir / "kernels.elf"
        ld = [*self.board.ldflags, *COMMON_LINKFLAGS, "-L", str(shared_dir()), "-L", str(self.dir / "ld"),
              "-T", str(self.board.linker_script)]
        cmd = [GCC, *self.cflags(), "-Wno-unused-parameter", str(pdir / "main.c"), *map(str, self._board_objs),
               str(self.dir / "libtabula_kernels.a"), *ld, "-o", str(elf)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise DeviceError(f"{self.target}: building {pdir / 'main.c'} failed:\n{r.stderr[-4000:]}")
        q = self.board.runner_config("qemu")
        shift = q.get("icount_shift", 0)
        qcmd = [QEMU, "-M", q.get("machine", "mps3-an547"), "-display", "none", "-monitor", "none", "-no-reboot",
                "-semihosting-config", "enable=on,target=native"]
        if shift is not None:
            qcmd += ["-icount", f"shift={shift}"]
        qcmd += ["-serial", "null"] * int(q.get("serial_index", 0)) + ["-serial", "stdio", *q.get("extra_args", []),
                                                                       "-kernel", str(elf)]
        try:
            p = subprocess.run(qcmd, capture_output=True, timeout=self.timeout_s, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as e:
            raise DeviceError(f"{self.target}: {elf} did not finish in {self.timeout_s:.0f} s under QEMU; "
                              f"its UART said: {(e.stdout or b'')[-300:]!r}") from None
        text = p.stdout.decode("ascii", "replace")
        (pdir / "run.log").write_text(text)
        if p.returncode != 0 or "@END" not in text:
            raise DeviceError(f"{self.target}: {elf} ended with exit code {p.returncode} (100+n: exception n, "
                              f"103 HardFault) before its last line; UART tail: {text[-300:]!r} {p.stderr[-300:]!r}")
        self._parse(cases, text, shift)

    def _parse(self, cases: list[_Case], text: str, shift) -> None:
        overhead = 0
        for line in text.splitlines():
            parts = line.split()
            if not parts:
                continue
            if parts[0] == "@O":
                overhead = int(parts[1], 16)
            elif parts[0] == "@T":
                run = cases[int(parts[1])].run
                run.status = int(parts[2], 16)
                run.ticks = max(int(parts[3], 16) - overhead, 0)
                if shift == 0 and self.board.tick_hz:
                    run.instructions = round(run.ticks * 1e9 / self.board.tick_hz)
            elif parts[0] == "@D":
                case = cases[int(parts[1])]
                cname, arr = [a.out for a in case.args if a.out][int(parts[2])]
                data = bytes.fromhex(parts[3])
                arr.reshape(-1).view(np.uint8)[:] = np.frombuffer(data[:arr.nbytes], np.uint8)
                case.run.outputs.append(arr)


def _check(cases: list[_Case]) -> None:
    for c in cases:
        if c.run.status != TABULA_OK:
            raise KernelError(c.kernel.name, c.run.status)


class _NoHostLib:
    """Stands in for the ctypes library: a method that calls it directly (a scalar helper such as
    ``apply_scale_32``) has no device form."""

    def __init__(self, target: str):
        self._target = target

    def __getattr__(self, name: str):
        def no_device_form(*args):
            raise DeviceError(f"{name} returns its result directly and has no device form on {self._target}; "
                              "call it through the host library (tabula.harness.host)")
        return no_device_form
