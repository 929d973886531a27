"""The real NPU: Arm's Ethos-U core driver and Vela's command streams on the Corstone-300 FVP's Ethos-U55
(``-C ethosu.num_macs=128``), every output bit for bit against the Python reference.  It needs
``FVP_Corstone_SSE-300_Ethos-U55`` on PATH and the driver's sources in ``$ETHOSU_DRIVER`` (plus ``$CMSIS_PATH``
when the driver includes CMSIS): .github/workflows/npu-fvp.yml installs both; on our machines it skips."""
from __future__ import annotations

import json
import sys

import pytest

from helpers import ROOT, scons

pytestmark = pytest.mark.npu_fvp


@pytest.mark.parametrize("example", ["digits", "mobilenet", "kws", "ic", "ad"])
def test_arms_driver_on_the_fvp_npu_is_bit_exact(example, tmp_path):
    if example in ("kws", "ic", "ad"):  # the MLPerf Tiny data lives outside the repository
        sys.path.insert(0, str(ROOT / "examples"))
        import mlperf_tiny

        try:
            mlperf_tiny.source_files(example)
        except FileNotFoundError as e:
            pytest.skip(str(e))
    scons("-j2", "board=corstone300", f"example={example}", "npu=ethos-u55-128", "runner=fvp", f"build_dir={tmp_path}",
          "limit=4", timeout=3600)
    r = json.loads((tmp_path / "corstone300" / f"{example}-ethos-u55-128" / "results.json").read_text())
    assert r["runner"] == "fvp" and r["n_outputs_received"] == r["n_samples"] == 4
    assert r["bit_exact_mismatches"] == 0 and r["npu"]["totals"]["cpu_ops"] == 0 and r["npu"]["driver"] == "ethosu"
