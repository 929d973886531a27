"""Shared test setup: the seed, tool markers, the C kernel library and the digits example.

Markers (pyproject.toml) say what a test needs; a test skips -- saying what is missing and the
command that installs it -- only when that is truly absent:

``host``  the host C compiler (``cc``)          ``arm``   ``arm-none-eabi-gcc``
``qemu``  ``qemu-system-arm`` and ``arm-none-eabi-gcc``
``tosa``  the TOSA reference model (``tosa-tools``)
``vela``  Arm's Vela compiler (``ethos-u-vela``, the ``[npu]`` extra)
``npu_fvp`` the real Ethos-U path: ``FVP_Corstone_SSE-300_Ethos-U55`` on PATH and Arm's driver in
          ``$ETHOSU_DRIVER`` (CI: .github/workflows/npu-fvp.yml; skips on our machines)
``fvp`` / ``board``: run against fakes here (no skip).

``python/`` and ``tests/`` are on the path (pyproject.toml ``pythonpath``), so tests import
``tabula`` from this checkout (the kernel harness is ``tabula.harness``) and test helpers directly; ``PYTHONPATH`` is set so
the processes the tests start do too.
"""
import os
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
# subprocesses the tests start (python -m tabula.cli, SCons, fake devices) import this checkout's tabula too
_PY = str(Path(__file__).resolve().parents[1] / "python")
os.environ["PYTHONPATH"] = os.pathsep.join([_PY] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != _PY])

import shutil  # noqa: E402
import zlib  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

#: Base seed of every randomized test; override with TABULA_SEED=<int>.
TABULA_SEED = int(os.environ.get("TABULA_SEED", "20250101"))

_INSTALL = {
    "cc": "apt-get install --no-install-recommends gcc libc6-dev",
    "arm-none-eabi-gcc": "./bootstrap.sh (apt-get install --no-install-recommends gcc-arm-none-eabi libnewlib-arm-none-eabi)",
    "qemu-system-arm": "./bootstrap.sh (apt-get install --no-install-recommends qemu-system-arm)",
}
_NEEDS = {"host": ("cc",), "arm": ("arm-none-eabi-gcc",), "qemu": ("qemu-system-arm", "arm-none-eabi-gcc")}


def pytest_report_header(config):
    return f"tabula: TABULA_SEED={TABULA_SEED}"


def missing_for(marker: str) -> str | None:
    """Why a test with ``marker`` cannot run here (what is missing and how to install it), or None."""
    if marker == "tosa":
        from tabula import tosa

        why = tosa.unavailable()
        return None if why is None else f"tosa-tools unavailable ({why}); pip install -e '.[test]'"
    if marker == "vela":
        from tabula.npu.vela import unavailable

        return unavailable()
    if marker == "npu_fvp":
        gone = [w for w, ok in (("FVP_Corstone_SSE-300_Ethos-U55 on PATH", shutil.which("FVP_Corstone_SSE-300_Ethos-U55")),
                                ("$ETHOSU_DRIVER (Arm's ethos-u-core-driver sources)", os.environ.get("ETHOSU_DRIVER")))
                if not ok]
        return (f"needs {' and '.join(gone)}: README, 'Ethos-U NPU' (CI: .github/workflows/npu-fvp.yml)" if gone
                else missing_for("vela") or missing_for("arm"))
    gone = [t for t in _NEEDS.get(marker, ()) if shutil.which(t) is None]
    return "; ".join(f"{t} not found on PATH: {_INSTALL[t]}" for t in gone) or None


def pytest_runtest_setup(item):
    for marker in ("host", "arm", "qemu", "tosa", "vela", "npu_fvp"):
        if item.get_closest_marker(marker) is not None:
            why = missing_for(marker)
            if why:
                pytest.skip(why)


@pytest.fixture(scope="session")
def kernel_lib(tmp_path_factory):
    """ctypes wrappers (tests/kernel_lib.KernelLib) over every C kernel, built once per session with
    the host ``cc``.  Skips when there is no host compiler."""
    from tabula.harness import host as kl

    why = missing_for("host")
    if why:
        pytest.skip(why)
    return kl.KernelLib(kl.build(tmp_path_factory.mktemp("kernels")))


@pytest.fixture(scope="session")
def tabula_seed() -> int:
    """TABULA_SEED, for a test that hands the seed to a tool (``from conftest import`` may find
    tests/npu/conftest.py instead when the whole suite runs)."""
    return TABULA_SEED


@pytest.fixture
def rng(request):
    """A numpy Generator seeded from TABULA_SEED and the test id (independent of test order)."""
    return np.random.default_rng([TABULA_SEED, zlib.crc32(request.node.nodeid.encode())])


# ---- the digits example -------------------------------------------------------------------------
@pytest.fixture(scope="session")
def digits_dir(tmp_path_factory):
    """Directory with the trained digits example: model.pt2, calib.npz, test.npz."""
    from digits_fixture import train_digits

    return train_digits(tmp_path_factory.mktemp("digits"))


@pytest.fixture(scope="session")
def digits_quantized(digits_dir):
    """(converted PT2E GraphModule, example_inputs, test x, test y) for the digits example."""
    from digits_fixture import load_digits_artifacts

    import tabula

    ep, calib, x, y = load_digits_artifacts(digits_dir)
    gm = tabula.quantize(ep, (calib[:1],), calib[:400])
    return gm, (calib[:1],), x, y


@pytest.fixture(scope="session")
def digits_program(digits_quantized):
    import tabula

    gm, example, _, _ = digits_quantized
    return tabula.lower(gm, example)


@pytest.fixture(scope="session")
def device_lib(tmp_path_factory):
    """``device_lib(target)``: a tabula.harness.device.DeviceKernelLib for a target of
    ``tabula.harness.device.TARGETS`` (``m55`` Helium, ``m55-portable``, ``m55-noasm``, ``m4``, ...), its
    kernel library built once per session.  Mark the test ``arm`` and ``qemu`` (they skip when the tools
    are absent; helpers.kernel_targets does)."""
    from tabula.harness import device as dk

    libs = {}
    root = tmp_path_factory.mktemp("device_kernels")

    def get(target: str):
        if target not in libs:
            board, portable, noasm = dk.TARGETS[target]
            libs[target] = dk.DeviceKernelLib(board, portable=portable, noasm=noasm, work_dir=root)
        return libs[target]

    return get


@pytest.fixture(scope="session")
def digits_m55_build(digits_dir, tmp_path_factory):
    """The digits example built for corstone300 by SCons (``run=0``) from the session's trained digits,
    once: ``.build_dir``, ``.out`` (``build_dir/corstone300/digits``), ``.elf`` and ``.args`` (the
    ``model= calib= data= name=`` options that build it).  Skips without the Arm compiler."""
    import types

    from helpers import scons

    why = missing_for("arm")
    if why:
        pytest.skip(why)
    b = tmp_path_factory.mktemp("digits_m55")
    args = [f"model={digits_dir / 'model.pt2'}", f"calib={digits_dir / 'calib.npz'}",
            f"data={digits_dir / 'test.npz'}", "name=digits"]
    scons("board=corstone300", f"build_dir={b}", "run=0", *args)
    out = b / "corstone300" / "digits"
    return types.SimpleNamespace(build_dir=b, out=out, elf=out / "firmware.elf", args=args, data=digits_dir / "test.npz",
                                 model=digits_dir / "model.pt2")


@pytest.fixture
def kernels_on(request, device_lib):
    """``kernels_on(target)``: the host library (the ``kernel_lib`` fixture) for ``"host"``, else the
    device library of that target (``device_lib``): the same op methods either way."""
    return lambda target: request.getfixturevalue("kernel_lib") if target == "host" else device_lib(target)
