"""SQNR (dB) of table ops with their own output qparams vs output qparams shared with the input.

Prints, for SiLU on [-10, 10] (a single-op model) and for the digits example, the output SQNR against
the float model when the table op's output grid is
  * ``shared``   -- forced onto the input's grid (the rule an upstream toolchain used to apply to SiLU),
  * ``observed`` -- its own grid, calibrated by an observer,
  * ``exact``    -- its own grid, derived from the image of every input code (tabula's default),
in both schemes (int8, a16w8).  Usage: ``python benchmarks/sqnr_table_qparams.py``.
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402
from torchao.quantization.pt2e import move_exported_model_to_eval  # noqa: E402
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e  # noqa: E402
from torchao.quantization.pt2e.quantizer import QuantizationAnnotation, SharedQuantizationSpec  # noqa: E402

import tabula  # noqa: E402
from tabula.quantizer import capture  # noqa: E402
from tabula.quantizer.annotator import TabulaQuantizer, _act_qspec  # noqa: E402
from tabula.report import sqnr_db  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


class SharedTableQuantizer(TabulaQuantizer):
    """The rule we reject, for comparison only: a table op's output shares its input's grid."""

    def _table(self, node, name):
        x = node.args[0]
        return QuantizationAnnotation({x: _act_qspec(self.scheme)}, SharedQuantizationSpec((x, node)), _annotated=True)


def quantize(model, example, calib, scheme, mode):
    if mode == "shared":
        gm = capture(model, example)
        prepared = prepare_pt2e(gm, SharedTableQuantizer(scheme))
        move_exported_model_to_eval(prepared)
        with torch.no_grad():
            for i in range(calib.shape[0]):
                prepared(calib[i : i + 1])
        gm = convert_pt2e(prepared)
        move_exported_model_to_eval(gm)
        return gm
    return tabula.quantize(model, example, calib, scheme=scheme, table_output=mode)


def silu_case(scheme, mode):
    x = torch.linspace(-10, 10, 4001).reshape(1, 4001)
    model = nn.Sequential(nn.SiLU())
    program = tabula.lower(quantize(model, (x,), x, scheme, mode))
    return sqnr_db(model(x).detach().numpy(), program.run(x.numpy())[0])


def digits_case(scheme, mode, d):
    ep = torch.export.load(str(d / "model.pt2"))
    calib = torch.from_numpy(np.load(d / "calib.npz")["x"][:400])
    test = np.load(d / "test.npz")["x"]
    program = tabula.lower(quantize(ep, (calib[:1],), calib, scheme, mode))
    fmod = ep.module(check_guards=False)
    with torch.no_grad():
        ref = np.concatenate([fmod(torch.from_numpy(test[i : i + 1])).numpy() for i in range(len(test))])
    return sqnr_db(ref, program.run(test)[0])


def main() -> int:
    import subprocess

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        subprocess.run([sys.executable, str(ROOT / "examples/digits/train.py"), "--out", str(d)], check=True,
                       capture_output=True)
        print(f"{'case':<22}{'scheme':<8}{'shared':>10}{'observed':>10}{'exact':>10}   (output SQNR vs float, dB)")
        for case in ("silu[-10,10]", "digits (360 images)"):
            for scheme in ("int8", "a16w8"):
                row = []
                for mode in ("shared", "observed", "exact"):
                    v = silu_case(scheme, mode) if case.startswith("silu") else digits_case(scheme, mode, d)
                    row.append(v)
                print(f"{case:<22}{scheme:<8}" + "".join(f"{v:>10.2f}" for v in row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
