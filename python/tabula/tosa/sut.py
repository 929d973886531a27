"""tabula as a system under test of TOSA's own conformance runner::

    tosa_verif_run_tests --sut-module tabula.tosa.sut -t <test dir> [-r] [-j N] \\
        [--sut-module-args tabula.tosa.sut:target=m55]

For each test (a ``desc.json``, its ``test.tosa`` and input ``.npy`` files, as ``tosa_verif_build_tests``
writes them) the runner makes a :class:`TosaSUTRunner`.  :meth:`~TosaSUTRunner.skipTest` reads the graph
into tabula's IR (:func:`tabula.tosa.read`) and reports what tabula does not implement -- an operator, a
dtype, an attribute value, a variant outside an op's contract, a dtype pair without a C kernel; on a
QEMU target, arrays larger than its device harness holds -- as SKIPPED with the one-line reason;
:meth:`~TosaSUTRunner.runTestGraph` runs the graph through tabula's C kernels, one kernel call per IR op
(:mod:`tabula.tosa.kernel_calls`), and writes each result ``.npy`` the runner then checks against the
reference model's.

``--sut-module-args tabula.tosa.sut:<key>=<value>`` (repeatable):

* ``target``: ``host`` (default: the kernels compiled with the host ``cc`` into a shared library, called
  through ctypes), ``m55`` (Cortex-M55 with its Helium paths, QEMU ``mps3-an547``), ``m55-portable`` (the
  same core, ``TABULA_PORTABLE_ONLY=1``), ``m4`` (Cortex-M4 with its DSP paths, QEMU ``mps2-an386``), the
  device harness's other targets (``m55-noasm``, ``m4-portable``, ``m4-noasm``, ``m33``:
  :data:`tabula.harness.device.TARGETS`), or ``reference`` (tabula's Python integer reference instead of
  the C: tells a kernel's divergence from the spec's);
* ``work_dir``: where the kernel libraries are built and kept (default ``<tmp>/tabula-sut``; rebuilt when
  a kernel source changes).

QEMU targets run one program per test (calls of one target are serialized inside one runner process).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
from pathlib import Path

import numpy as np

from runner.tosa_test_runner import TosaTestRunner

from .. import kernels
from ..errors import TabulaError
from ..harness import device, host
from . import kernel_calls
from .reader import TosaReader, Unsupported

#: The QEMU targets: the device harness's (name -> (board, portable, noasm): ``m55``, ``m55-portable``, ``m4``,
#: ...); ``host`` and ``reference`` run on this machine.
DEVICE_TARGETS = device.TARGETS
TARGETS = ("host", *DEVICE_TARGETS, "reference")

_LOCK = threading.Lock()
_LIBS: dict[tuple[str, str], object] = {}
_TARGET_LOCKS: dict[str, threading.Lock] = {}


class SutError(TabulaError, RuntimeError):
    """The system under test could not be set up (a bad argument, a kernel library that does not build)."""


def default_work_dir() -> Path:
    """``<tmp>/tabula-sut``: where the kernel libraries are built unless ``work_dir=`` says otherwise."""
    return Path(tempfile.gettempdir()) / "tabula-sut"


def _sources_hash(extra: list[str]) -> str:
    h = hashlib.sha256("\0".join(extra).encode())
    for p in [*kernels.sources(), *sorted(kernels.kernels_dir().rglob("*.h")), kernels.manifest_path()]:
        h.update(str(p.name).encode() + p.read_bytes())
    return h.hexdigest()[:16]


def kernel_library(target: str = "host", work_dir: str | os.PathLike | None = None):
    """The kernel library of ``target`` (one per process and target; built into ``work_dir`` once and reused
    while the kernel sources are unchanged).  ``host``: the harness's ``KernelLib`` over a shared library;
    ``m55`` / ``m55-portable`` / ``m4``: its ``DeviceKernelLib`` (QEMU); ``reference``: None (the Python
    reference runs).  Raises :class:`SutError` for an unknown target or a build that fails (its output)."""
    if target not in TARGETS:
        raise SutError(f"target={target!r}: the targets are {', '.join(TARGETS)}")
    work = Path(work_dir) if work_dir else default_work_dir()
    with _LOCK:
        key = (target, str(work))
        if key in _LIBS:
            return _LIBS[key]
        if target == "reference":
            lib = None
        elif target == "host":
            d = work / f"host-{_sources_hash(host.CFLAGS)}"
            so = d / "libtabula_kernels.so"
            if not so.is_file():
                work.mkdir(parents=True, exist_ok=True)
                tmp = Path(tempfile.mkdtemp(prefix="build-", dir=work))
                try:
                    built = host.build(tmp)
                    d.mkdir(parents=True, exist_ok=True)
                    os.replace(built, so)
                except Exception as e:  # noqa: BLE001 - the compiler's message is the reason
                    raise SutError(f"building the host kernel library failed: {e}") from None
                finally:
                    shutil.rmtree(tmp, ignore_errors=True)
            lib = host.KernelLib(so)
        else:
            board, portable, noasm = DEVICE_TARGETS[target]
            try:
                lib = device.DeviceKernelLib(board, portable=portable, noasm=noasm, work_dir=work)
                lib.build()
            except device.DeviceError as e:
                raise SutError(f"target={target}: {e}") from None
        _LIBS[key] = lib
        _TARGET_LOCKS.setdefault(target, threading.Lock())
        return lib


def parse_args(runner_args: list[str]) -> dict[str, str]:
    """``["target=m55", "work_dir=/tmp/x"]`` -> ``{"target": "m55", "work_dir": "/tmp/x"}``; SutError for an
    unknown key or a missing ``=``."""
    out = {"target": "host", "work_dir": ""}
    for a in runner_args:
        key, sep, value = a.partition("=")
        if not sep or key not in out:
            raise SutError(f"tabula.tosa.sut argument {a!r}: use target=<{'|'.join(TARGETS)}> or work_dir=<folder>")
        out[key] = value
    if out["target"] not in TARGETS:
        raise SutError(f"tabula.tosa.sut: target={out['target']!r}; the targets are {', '.join(TARGETS)}")
    return out


def device_room(target: str) -> tuple[int, int]:
    """``(input bytes, output bytes)`` one kernel call may have on a QEMU target's device harness: its inputs
    are C arrays in ``.rodata`` (the board's code region less the room kept for code), its output in ``.bss``
    (the RAM region less stack and heap); a quarter of each is kept for the harness and the kernels."""
    from ..boards import load_board

    mm = load_board(DEVICE_TARGETS[target][0]).memory
    return (3 * (mm.code.length - mm.code_bytes) // 4, 3 * (mm.ram.length - mm.stack_bytes - mm.heap_bytes) // 4)


def too_large_for(g, target: str) -> str | None:
    """Why graph ``g`` cannot run on QEMU ``target``'s device harness (an op whose arrays do not fit it:
    :func:`device_room`), or None."""
    room_in, room_out = device_room(target)
    for op in g.ops:
        n_in = sum(g.tensors[n].nbytes for n in op.inputs)
        n_out = g.tensors[op.outputs[0]].nbytes
        if n_in > room_in or n_out > room_out:
            return (f"{op.op}: {n_in} input and {n_out} output bytes; the {target} device harness holds at most {room_in} and "
                    f"{room_out} per kernel call (board {DEVICE_TARGETS[target][0]})")
    return None


class PreparedTest:
    """One conformance test read for tabula: the IR graph of its ``test.tosa`` and what tabula cannot run.

    ``test_dir`` holds ``desc.json`` (or ``desc_file``) and the files it names.  :attr:`why` is None, or the
    one-line reason the test is outside what tabula implements (:class:`tabula.tosa.Unsupported`, or a
    kernel the C lacks) or, for a QEMU ``target``, larger than its device harness holds
    (:func:`too_large_for`); :attr:`graph` the IR graph (None then)."""

    def __init__(self, test_dir: str | os.PathLike, desc: dict | None = None, target: str = "host"):
        self.dir = Path(test_dir)
        self.desc = desc if desc is not None else json.loads((self.dir / "desc.json").read_text())
        self.graph = None
        self.why: str | None = None
        self._reader = None
        try:
            r = TosaReader((self.dir / self.desc["tosa_file"]).read_bytes())
            self.graph = r.read()
            self._reader = r
        except Unsupported as e:
            self.why = str(e)
            return
        self.why = kernel_calls.unsupported(self.graph, set(kernels.names()))
        if self.why is None and target in DEVICE_TARGETS:
            self.why = too_large_for(self.graph, target)
        if self.why:
            self.graph = None

    def inputs(self) -> list[np.ndarray]:
        """The graph inputs, in graph order, from the test's ``ifm_file`` arrays (matched by ``ifm_name``)."""
        files = dict(zip(self.desc["ifm_name"], self.desc["ifm_file"]))
        out = []
        for tosa_name, ir_name in zip(self._reader.block_inputs, self.graph.inputs):
            t = self.graph.tensors[ir_name]
            a = np.load(self.dir / files[tosa_name])
            out.append(np.ascontiguousarray(a.astype(t.np_dtype, casting="same_kind")).reshape(t.shape))
        return out

    def run(self, lib) -> dict[str, np.ndarray]:
        """The outputs by their TOSA names: the graph through ``lib``'s kernels (or, ``lib`` None, tabula's
        Python reference interpreter)."""
        from ..reference.interpreter import run_graph as run_reference

        ins = self.inputs()
        outs = run_reference(self.graph, ins) if lib is None else kernel_calls.run_graph(lib, self.graph, ins)
        return dict(zip(self._reader.block_outputs, outs))

    def write(self, outputs: dict[str, np.ndarray]) -> list[Path]:
        """Write each output as the ``ofm_file`` the test names for it (a TOSA ``BOOL`` output, the IR's int8
        mask, as numpy bool); returns the paths."""
        paths = []
        for name, f in zip(self.desc["ofm_name"], self.desc["ofm_file"]):
            p = self.dir / f
            y = outputs[name]
            np.save(p, y.astype(bool) if self._reader.tosa_tensor(name)[1] == "BOOL" else y)
            paths.append(p)
        return paths


def skip_reasons(output: str, tests) -> dict[str, str]:
    """Test folder -> the reason it was skipped, from ``tosa_verif_run_tests``' output (one ``Skipping <reason>
    test <folder>`` per skipped test); ``tests`` are the folders run (with ``-j`` the runner's threads may
    write other text right after a folder's name, even the next ``Skipping``, so each is matched as the
    longest test folder it starts with, and the folder is not consumed by the match)."""
    names = sorted((str(t) for t in tests), key=len, reverse=True)
    out = {}
    for m in re.finditer(r"Skipping ([^\n]*?) test (?=(\S+))", output):
        folder = next((n for n in names if m.group(2).startswith(n)), None)
        if folder is not None:
            out[folder] = m.group(1)
    return out


class TosaSUTRunner(TosaTestRunner):
    """tabula's C kernels as a TOSA system under test (module docstring); ``runnerArgs`` are the
    ``--sut-module-args tabula.tosa.sut:key=value`` values (:func:`parse_args`)."""

    def __init__(self, args, runnerArgs, testDirPath):
        super().__init__(args, runnerArgs, testDirPath)
        self.options = parse_args(list(runnerArgs))
        self.prepared: PreparedTest | None = None

    def _prepare(self) -> PreparedTest:
        if self.prepared is None:
            self.prepared = PreparedTest(self.testDirPath, self.testDesc, self.options["target"])
        return self.prepared

    def skipTest(self):
        """The runner's own filters (test type, profile), then what tabula does not implement: ``(True,
        reason)``, the reason one line (operator, attribute, value)."""
        skip, reason = super().skipTest()
        if skip:
            return skip, reason
        why = self._prepare().why
        return (True, f"tabula: {why}") if why else (False, "")

    def runTestGraph(self):
        """Run the graph through the target's kernels and write the result files: ``(TOSA_VALID, None)``, or
        ``(OTHER_ERROR, message)`` when a kernel refused its arguments or the device run failed."""
        t = self._prepare()
        if t.why:  # the runner calls skipTest first; here only when a caller did not
            return TosaTestRunner.TosaGraphResult.OTHER_ERROR, f"tabula: {t.why}"
        target = self.options["target"]
        try:
            lib = kernel_library(target, self.options["work_dir"] or None)
            if target in DEVICE_TARGETS:
                with _TARGET_LOCKS[target]:
                    outputs = t.run(lib)
            else:
                outputs = t.run(lib)
            t.write(outputs)
        except SutError as e:
            return TosaTestRunner.TosaGraphResult.OTHER_ERROR, str(e)
        except Exception as e:  # noqa: BLE001 - a kernel status or a device failure is this test's result
            return TosaTestRunner.TosaGraphResult.OTHER_ERROR, f"tabula ({target}): {type(e).__name__}: {e}"
        return TosaTestRunner.TosaGraphResult.TOSA_VALID, None
