"""Helpers several test modules share (tests/ is on the path: ``from helpers import scons``)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def scons(*args, env=None, check=True, timeout=900):
    """Run SCons in the repo root with this interpreter; returns the CompletedProcess."""
    proc = subprocess.run(
        [sys.executable, "-m", "SCons", "-Q", *args], cwd=ROOT, capture_output=True, text=True,
        env=env or {**os.environ, "OMP_NUM_THREADS": "1"}, timeout=timeout,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"scons {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


#: A fresh interpreter running ``tabula <argv>`` that prints how many torch/torchao modules got loaded.
PROBE = """
import sys
from tabula.cli import main
rc = main(sys.argv[1:]) if len(sys.argv) > 1 else 0
loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'torchao'))
print('TORCH-MODULES', len(loaded), loaded[:3])
sys.exit(rc)
"""


def torch_modules(*argv: str) -> int:
    """How many torch/torchao modules ``tabula <argv>`` (none: ``import tabula.cli``) loads; the command
    must succeed."""
    p = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("TORCH-MODULES")][-1]
    return int(line.split()[1])


def pty_run(argv, env, timeout=600):
    """``argv`` with a terminal (a pty of 24 x 100) as stdin, stdout and stderr; returns (code, output)."""
    import fcntl
    import pty
    import select
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    p = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True, cwd=ROOT)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], timeout)
        if not ready:
            p.kill()
            break
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    p.wait(timeout=60)
    os.close(master)
    return p.returncode, b"".join(chunks).decode("utf-8", "replace")


# ---- the kernel targets: one test per op runs its cases on each -------------------------------------
#: ``host`` (the ctypes library) and the emulated cores of :data:`tabula.harness.device.TARGETS`.
KERNEL_TARGETS = ["host", "m55", "m55-portable", "m55-noasm", "m4", "m4-portable", "m4-noasm", "m33"]


def kernel_targets(*names: str) -> list:
    """pytest params of ``names`` (default :data:`KERNEL_TARGETS`), marked with what each needs: the host
    compiler, or the Arm compiler and QEMU."""
    import pytest

    return [pytest.param(t, marks=[pytest.mark.host] if t == "host" else [pytest.mark.arm, pytest.mark.qemu])
            for t in (names or KERNEL_TARGETS)]


def int8(rng, shape, edges: bool = False):
    """Random int8 in [-128, 127]; ``edges``: only the two ends."""
    import numpy as np

    if edges:
        return rng.choice(np.array([-128, 127], np.int8), shape)
    return rng.integers(-128, 127, shape, endpoint=True, dtype=np.int8)


def weights8(rng, shape):
    """Random symmetric int8 weights in [-127, 127]."""
    import numpy as np

    return rng.integers(-127, 127, shape, endpoint=True, dtype=np.int8)


def requant_block(rng, acc, kind: str = "random"):
    """A requant block (:func:`tabula.requant.pack`) for int32 accumulators ``acc`` (last axis: the output
    channels) whose outputs land around the int8 range (some saturate):

    * ``random``: multipliers in [2^30, 2^31), shifts log2|acc| + 22 .. + 25, any zero point;
    * ``edges``: as random, with multiplier 0, 1 and 2^31 - 1, shifts 2 and 62 on the first channels, the
      zero point at an end and a CLAMP inside the range;
    * ``extremes``: as random, with (2^31 - 1, 62), (2^30, 2), (2^31 - 1, 32) on the first channels (the
      DSP paths' cases);
    * ``ties``: shifts 33..62 only (the vector epilogue): m = 2^30 with s = 30 + k makes one accumulator in
      2^k an exact tie; every 5th channel an extreme (m 0, 1, 2^31 - 1 with s 33, 2^31 - 1 with s 62);
    * ``ties_relu``: as ties with a CLAMP inside the int8 range (a fused ReLU: out_min = the zero point, or
      out_max below 127), which the DSP paths' SSAT epilogue must leave to the general one."""
    import numpy as np

    from tabula import requant

    cout = acc.shape[-1]
    log2 = int(np.log2(np.abs(acc.astype(np.int64)).max() + 1))
    zp, lo, hi = int(rng.integers(-128, 128)), -128, 127
    if kind in ("ties", "ties_relu"):
        k = max(3, log2 - 7)
        m, s = np.full(cout, 2**30), 30 + k + np.arange(cout) % 2
        for o in range(0, cout, 5):
            m[o], s[o] = [(0, 33), (1, 33), (2**31 - 1, 33), (2**31 - 1, 62)][(o // 5) % 4]
        if kind == "ties_relu":
            zp = int(rng.choice([-128, -20, 5]))
            return requant.pack(zp, zp, 127 if zp > -128 else 100, m, s)
        return requant.pack(int(rng.choice([-128, 127, 5])), -128, 127, m, s)
    m = rng.integers(2**30, 2**31, cout)
    s = rng.integers(log2 + 22, log2 + 26, cout)
    ends = {"edges": [(0, 31), (1, 2), (2**31 - 1, 2), (2**31 - 1, 62), (2**30, 62)],
            "extremes": [(2**31 - 1, 62), (2**30, 2), (2**31 - 1, 32)]}.get(kind, [])
    for o, (mv, sv) in zip(range(cout), ends):
        m[o], s[o] = mv, sv
    if kind == "edges":
        zp = int(rng.choice([-128, 127]))
        lo, hi = (zp, 127) if zp < 0 else (-100, zp)
    return requant.pack(zp, lo, hi, m, s)


def requant_block16(rng, acc, out_min: int = -32768, shifts=None):
    """A requant block for int48 accumulators: multipliers < 2^15, output zp 0, int16 outputs (some
    saturate) clamped to [out_min, 32767]; ``shifts``: {channel: shift} set after the random ones."""
    import numpy as np

    from tabula import requant

    log2 = int(np.log2(np.abs(acc.astype(np.int64)).max() + 1))
    m = rng.integers(2**14, 2**15, acc.shape[-1])
    s = rng.integers(log2 - 2, log2 + 2, acc.shape[-1]).clip(2, 62)
    for ch, v in (shifts or {}).items():
        s[ch] = v
    return requant.pack(0, out_min, 32767, m, s)


def requant_block_cross(rng, acc, acc48: bool, kind: str = "random"):
    """A requant block of a precision boundary's kernel (``tabula_<op>_s16_s8``: ``acc48`` int48 accumulators,
    multipliers < 2^15, int8 out with any zero point; ``tabula_<op>_s8_s16``: int32 accumulators, multipliers
    < 2^31, int16 out with zero point 0), scaled so the outputs land around the output type's range (some
    saturate at both ends):

    * ``random``: multipliers in the upper half of their range, shifts near log2|acc| + the multiplier's
      bits - the output's bits (int48 -> int8: inside [17, 46], the Helium vector epilogue's; int32 ->
      int16: mostly >= 33);
    * ``edges``: as random, with (multiplier, shift) (0, s), (1, 2), (max, 62), (max, 2) and (max, 33) on the
      first channels, the zero point at an end (int8) and a CLAMP inside the range;
    * ``ties``: the multiplier a power of two and small shifts (int48: 17..19, int32: 33..35), so that
      accumulators with the right low bits are exact ties (half toward +infinity)."""
    import numpy as np

    from tabula import requant

    cout = acc.shape[-1]
    m_bits, out_bits = (15, 7) if acc48 else (31, 15)
    log2 = int(np.log2(np.abs(acc.astype(np.int64)).max() + 1))
    m = rng.integers(2 ** (m_bits - 1), 2**m_bits, cout)
    s = (log2 + m_bits - out_bits - 1 - rng.integers(0, 3, cout)).clip(2, 62)
    zp = int(rng.integers(-128, 128)) if acc48 else 0
    lo, hi = (-128, 127) if acc48 else (-32768, 32767)
    if kind == "ties":
        m = np.full(cout, 2 ** (m_bits - 1))
        s = m_bits - 1 + 3 + np.arange(cout) % 3 if acc48 else 33 + np.arange(cout) % 3
    elif kind == "edges":
        mx = 2**m_bits - 1
        for o, (mo, so) in zip(range(cout), [(0, int(s[0])), (1, 2), (mx, 62), (mx, 2), (mx, 33)]):
            m[o], s[o] = mo, so
        if acc48:
            zp = [-128, 127][int(rng.integers(0, 2))]
            lo, hi = (zp, 127) if zp < 0 else (-128, 100)
        else:
            lo = 0   # an int16 ReLU
    return requant.pack(zp, lo, hi, m, s)


def run_kernel_cases(lib, cases):
    """Run ``cases`` -- ``[(label, call, want)]`` with ``call(lib) -> output array`` -- in one batch on
    ``lib`` (the host library or a device one) and compare every output with ``want`` bit for bit;
    fails naming the first case that differs."""
    import numpy as np
    import pytest

    with lib.batch():
        got = [call(lib) for _, call, _ in cases]
    for (label, _, want), g in zip(cases, got):
        assert g.dtype == want.dtype and g.shape == want.shape, (label, g.dtype, g.shape, want.dtype, want.shape)
        if not np.array_equal(g, want):
            bad = np.argwhere(g != want)
            pytest.fail(f"{label}: {len(bad)} of {g.size} differ, first at {tuple(bad[0])}: "
                        f"got {g[tuple(bad[0])]}, reference {want[tuple(bad[0])]}")


def run_table_graph_c(g, x, kernel_lib) -> dict:
    """Every op of a table-op graph (:func:`tabula.report.table_cases.table_op_graph`: TABLE, RESCALE,
    CLAMP, MUL, ADD, SUB) through the C kernels of the host build, in order: tensor name -> value."""
    vals = {"x": x}
    for op in g.ops:
        a = vals[op.inputs[0]]
        if op.op == "TABLE":
            out = kernel_lib.table(a, g.constants[op.inputs[1]])
        elif op.op == "RESCALE":
            at = op.attrs
            out = kernel_lib.rescale(a, input_zp=at["input_zp"], output_zp=at["output_zp"], multiplier=at["multiplier"],
                                     shift=at["shift"], output_dtype=g.tensors[op.outputs[0]].dtype)
        elif op.op == "CLAMP":
            out = kernel_lib.clamp(a, op.attrs["min"], op.attrs["max"])
        elif op.op == "MUL":
            out = kernel_lib.mul(a, vals[op.inputs[1]], op.attrs.get("shift", 0))
        else:
            assert op.op in ("ADD", "SUB"), op.op
            out = (kernel_lib.add if op.op == "ADD" else kernel_lib.sub)(a, vals[op.inputs[1]])
        vals[op.outputs[0]] = out
    return vals


def load_example(relpath: str, name: str | None = None):
    """The module at ``ROOT/<relpath>`` (e.g. ``examples/mobilenet/model.py``), loaded by file under a unique
    name: several examples have a ``model.py``, so ``import model`` after a ``sys.path`` insert returns whichever
    test ran first."""
    import importlib.util

    path = ROOT / relpath
    name = name or "tabula_example_" + "_".join(Path(relpath).with_suffix("").parts[1:])
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
