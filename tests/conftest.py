import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import zlib  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402


# ==== kernels: host build of the C kernels + seeded RNG (owner: kernels; tests/kernel_lib.py) ====
#: Base seed of every randomized test; override with TABULA_SEED=<int>.
TABULA_SEED = int(os.environ.get("TABULA_SEED", "20250101"))


def pytest_report_header(config):
    return f"tabula: TABULA_SEED={TABULA_SEED}"


@pytest.fixture(scope="session")
def kernel_lib(tmp_path_factory):
    """ctypes wrappers (tests/kernel_lib.KernelLib) over all firmware_templates/runtime/kernels/*.c,
    built once per session with the host ``cc``.  Skips when there is no host compiler."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))  # tests/kernel_lib.py, whatever the import mode
    import kernel_lib as kl

    if kl.compiler() is None:
        pytest.skip("host C compiler 'cc' not found on PATH")
    return kl.KernelLib(kl.build(tmp_path_factory.mktemp("kernels")))


@pytest.fixture
def rng(request):
    """A numpy Generator seeded from TABULA_SEED and the test id (independent of test order)."""
    return np.random.default_rng([TABULA_SEED, zlib.crc32(request.node.nodeid.encode())])
# ==== end kernels block ==========================================================================


# ==== digits example + SCons helpers (owner: pipeline; tests/digits_fixture.py) ==================
@pytest.fixture(scope="session")
def digits_dir(tmp_path_factory):
    """Directory with the trained digits example: model.pt2, calib.npz, test.npz."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
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
# ==== end digits block ============================================================================
