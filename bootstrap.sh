#!/usr/bin/env bash
# Set up a fresh Debian/Ubuntu machine for tabula (idempotent; run as root or with sudo).
#   Arm GNU toolchain + newlib (cross compiler), QEMU (runs the Corstone-300 firmware),
#   and the Python package with its pinned dependencies (torch==2.13.0 CPU, torchao 0.18), the test
#   tools, the MLPerf Tiny extras (tflite reader, ai-edge-litert), the ONNX importer (onnx, onnx2torch), the
#   dev-board extras (pyocd, cmsis-pack-manager) and the NPU extra (Arm's Vela compiler, ethos-u-vela==5.2.0).
set -euo pipefail
cd "$(dirname "$0")"

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

APT_PACKAGES="gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm gcc"
missing=""
for p in $APT_PACKAGES; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "bootstrap: installing Debian packages:$missing"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
fi

PY=${PYTHON:-python3}
# installed already: every dependency found (onnx2torch by its files: it does not import without torchvision,
# which tabula.importers.onnx stands in for) and the editable tabula is *this* checkout's
installed() {
    $PY - <<'PYEOF' >/dev/null 2>&1
import importlib.util, pathlib, sys
import tabula, torch, torchao, SCons, pyocd, cmsis_pack_manager, ethosu.vela, onnx
here = pathlib.Path("python").resolve()
sys.exit(0 if importlib.util.find_spec("onnx2torch") and here in pathlib.Path(tabula.__file__).resolve().parents else 1)
PYEOF
}
if ! installed || [ pyproject.toml -nt .bootstrap-stamp ]; then
    echo "bootstrap: installing the tabula Python package and its dependencies"
    # torch is pinned to the CPU build; an open range would pull a multi-GB CUDA build.
    $PY -m pip install -q --disable-pip-version-check "torch==2.13.0"
    $PY -m pip install -q --disable-pip-version-check -e '.[test,mlperf,board,npu,onnx]'
    # onnx2torch without its dependencies: it requires torchvision (for NMS / RoiAlign only), and the
    # torchvision pip finds is built for another torch than the pinned CPU one (tabula.importers.onnx
    # stands in for it when it does not import)
    $PY -m pip install -q --disable-pip-version-check --no-deps "onnx2torch>=1.5.15,<2"
    touch .bootstrap-stamp
fi
# pyenv only sees new console scripts (scons, tabula) after a rehash.
if command -v pyenv >/dev/null 2>&1; then pyenv rehash >/dev/null 2>&1 || true; fi
# pip may put the scons launcher outside PATH for non-root users.
if ! command -v scons >/dev/null 2>&1; then
    echo "bootstrap: note: 'scons' is not on PATH; use '$PY -m SCons' or add $($PY -m site --user-base)/bin to PATH"
fi
echo "bootstrap: ready"
