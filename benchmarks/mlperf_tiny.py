"""tabula on the MLPerf Tiny reference models, next to TFLite's int8 and TFLite Micro + CMSIS-NN.

    python benchmarks/mlperf_tiny.py                       # kws, ic, ad on corstone300 (QEMU), int8 and a16w8
    python benchmarks/mlperf_tiny.py --models ad --schemes int8 --board host
    python benchmarks/mlperf_tiny.py --models kws,ic --schemes int8,a16w8,mixed --larger   # + the larger sets

Per model (``examples/mlperf_tiny/``; data in ``../shared/mlperf_tiny`` or ``$TABULA_MLPERF_TINY``):

* **tabula** int8 and a16w8: ``scons board=<board> example=<model> scheme=<s>`` (calibrated on the even
  shipped inputs, run on the odd ones: kws 7, ic 16, ad 20), then on that test split: SQNR of the
  integer program's outputs vs ``y_float`` (the Python reference, which the device matched bit for bit:
  ``mism`` = 0), top-1 agreement with float (kws, ic) or the Pearson correlation of the anomaly scores
  (ad: score = mean squared error of the reconstruction vs the input, per sample), and from
  ``results.json``: instructions per inference (QEMU ``-icount shift=0``), flash, RAM, arena bytes.
* **TFLite int8** (the ``*_int8.tflite`` peer, run with ``ai-edge-litert``): the same figures on the
  same test split, plus its SQNR on all shipped samples (``all``; mlperf_tiny's README: kws 27.3, ic 15.6,
  ad 31.6 dB), with the default runtime (``tflite``: XNNPACK) and with TFLite's reference kernels
  (``tflite-ref``: the numerics TFLite Micro and CMSIS-NN reproduce bit for bit).
* **TFLM + CMSIS-NN** on the M55 (quoted from issue 11): instructions per inference kws 1,812,687,
  ic 4,911,187, ad 150,031; arena kws 27,360 B, ic 55,040 B, ad 9,712 B; with ``--board mps2_an386``
  also on the Cortex-M4 (kws 7,696,920, ic 29,863,040, ad 582,920).

* ``--larger``: the same builds (calibrated on the even shipped inputs) and the TFLite int8 peer also on
  the larger evaluation sets (mlperf_tiny's README: ``kws_synth_a.npz``, 204 windows; ``ic_crops_a.npz``,
  203 crops), none of whose samples calibrated anything: SQNR vs ``y_float`` and top-1 agreement, the
  ``larger`` columns.  tabula's outputs there are the Python reference's (the device matched it bit for
  bit on the shipped test split: ``mism``).  ``scheme=mixed`` builds take SCons's default target.

A model whose build fails is skipped with one line naming the error.  Prints one table.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "examples"))

import numpy as np  # noqa: E402

import mlperf_tiny  # noqa: E402
from tabula.report import sqnr_db  # noqa: E402

#: TFLite Micro + CMSIS-NN on the Cortex-M55 (issue 11): instructions per inference and arena bytes.
TFLM_CMSIS_NN = {"kws": (1_812_687, 27_360), "ic": (4_911_187, 55_040), "ad": (150_031, 9_712)}
#: The same on the Cortex-M4 (QEMU mps2-an386, CMSIS-NN's DSP kernels; issue 11): instructions per inference.
TFLM_CMSIS_NN_M4 = {"kws": 7_696_920, "ic": 29_863_040, "ad": 582_920}


def task_figure(name: str, x: np.ndarray, y: np.ndarray, y_float: np.ndarray) -> float:
    """Top-1 agreement of ``y`` with ``y_float`` (classification), or the Pearson correlation of the
    per-sample anomaly scores ``mean((y - x)^2)`` with float's (anomaly detection)."""
    if mlperf_tiny.SPECS[name].task == "classification":
        return float((y.argmax(1) == y_float.argmax(1)).mean())
    xs = x.reshape(len(x), -1)
    s, sf = ((y - xs) ** 2).mean(1), ((y_float - xs) ** 2).mean(1)
    return float(np.corrcoef(s, sf)[0, 1])


def tflite_int8(name: str, x_nhwc: np.ndarray, reference_kernels: bool) -> np.ndarray:
    """Outputs (float, dequantized) of the TFLite int8 model on ``x_nhwc``, one sample at a time.
    Inputs are quantized as TFLite's QUANTIZE does (round half away from zero, clamp to int8)."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    rt = OpResolverType.BUILTIN_REF if reference_kernels else OpResolverType.AUTO
    it = Interpreter(model_path=str(mlperf_tiny.source_files(name)[1]),
                     experimental_op_resolver_type=rt)
    it.allocate_tensors()
    inp, out = it.get_input_details()[0], it.get_output_details()[0]
    (s_in, zp_in), (s_out, zp_out) = inp["quantization"], out["quantization"]
    ys = []
    for xi in x_nhwc:
        v = xi / s_in
        q = np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5) + zp_in, -128, 127).astype(np.int8)
        it.set_tensor(inp["index"], q[None])
        it.invoke()
        ys.append((it.get_tensor(out["index"]).astype(np.float32) - zp_out) * s_out)
    return np.concatenate(ys)


#: The larger evaluation sets (in ``mlperf_tiny.data_dir()``; mlperf_tiny's README).
LARGER = {"kws": "kws_synth_a.npz", "ic": "ic_crops_a.npz"}


def load_larger(name: str) -> dict[str, np.ndarray] | None:
    """The larger set of ``name`` as :func:`mlperf_tiny.load_inputs` gives the shipped one (``x`` NCHW,
    ``x_tflite``, ``y_float``), or None when this machine has none for it."""
    d = mlperf_tiny.data_dir()
    if name not in LARGER or d is None or not (d / LARGER[name]).is_file():
        return None
    with np.load(d / LARGER[name]) as z:
        out = {k: z[k] for k in ("x", "y_float")}
    x = out["x"].astype(np.float32)
    out["x_tflite"], out["x"] = x, np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    return out


def tabula_run(name: str, scheme: str, board: str, build_dir: Path) -> dict:
    """Build and run the example through SCons; returns results.json plus ``program`` dir, or
    ``{"skip": reason}`` naming the first error line when the build fails."""
    cmd = [sys.executable, "-m", "SCons", "-Q", "-C", str(ROOT), f"board={board}", f"example={name}",
           f"scheme={scheme}", f"build_dir={build_dir}"]
    p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    if p.returncode != 0:
        err = [ln for ln in (p.stderr + p.stdout).splitlines() if ln.startswith(("tabula: error", "scons: ***"))]
        return {"skip": f"build failed: {err[0] if err else p.stderr.strip().splitlines()[-1:]}"}
    sub = name if scheme == "int8" else f"{name}-{scheme}"
    out = build_dir / board / sub
    r = json.loads((out / "results.json").read_text())
    r["dir"] = out
    return r


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(mlperf_tiny.SPECS))
    ap.add_argument("--schemes", default="int8,a16w8")
    ap.add_argument("--board", default="corstone300")
    ap.add_argument("--build-dir", default=str(ROOT / "build" / "bench"))
    ap.add_argument("--larger", action="store_true", help="also measure on the larger evaluation sets (kws, ic)")
    a = ap.parse_args(argv)
    build_dir = Path(a.build_dir).resolve()

    import tabula

    head = (f"{'model':5} {'runtime':18} {'scheme':6} {'SQNR dB':>8} {'all':>6} {'task':>6} {'mism':>5} "
            f"{'instr/inf':>10} {'flash B':>8} {'RAM B':>7} {'arena B':>8}"
            + (f" {'larger':>7} {'top-1':>6}" if a.larger else ""))
    rows = [head, "-" * len(head)]

    def fmt(v, spec=","):
        return "-" if v is None else format(v, spec)

    for name in a.models.split(","):
        d = mlperf_tiny.load_inputs(name)
        _, test = mlperf_tiny.split(len(d["x"]))
        x, xt, yf = d["x"][test], d["x_tflite"], d["y_float"]
        big = load_larger(name) if a.larger else None

        def larger(run) -> str:  # SQNR and top-1 agreement on the larger set, or nothing
            if big is None:
                return ""
            y = run(big)
            return f" {sqnr_db(big['y_float'], y):7.1f} {task_figure(name, big['x'], y, big['y_float']):6.3f}"
        for scheme in a.schemes.split(","):
            r = tabula_run(name, scheme, a.board, build_dir)
            if "skip" in r:
                rows.append(f"{name:5} {'tabula':18} {scheme:6} {'skipped: ' + r['skip']}")
                continue
            y = tabula.load(r["dir"]).run(x)[0]
            rows.append(
                f"{name:5} {'tabula ' + a.board:18} {scheme:6} {sqnr_db(yf[test], y):8.1f} {'':>6} "
                f"{task_figure(name, x, y, yf[test]):6.3f} {r['bit_exact_mismatches']:5d} "
                f"{fmt(r['instructions_per_inference']):>10} {fmt(r['flash_bytes']):>8} {fmt(r['ram_bytes']):>7} "
                f"{fmt(r['arena_bytes']):>8}" + larger(lambda b, p=tabula.load(r["dir"]): p.run(b["x"])[0]))
        for ref, label in ((False, "tflite"), (True, "tflite-ref")):
            y_all = tflite_int8(name, xt, reference_kernels=ref)
            rows.append(f"{name:5} {label + ' (x86)':18} {'int8':6} {sqnr_db(yf[test], y_all[test]):8.1f} "
                        f"{sqnr_db(yf, y_all):6.1f} {task_figure(name, x, y_all[test], yf[test]):6.3f}"
                        + (f" {'':>5} {'':>10} {'':>8} {'':>7} {'':>8}"
                           + larger(lambda b, ref=ref: tflite_int8(name, b["x_tflite"], reference_kernels=ref))
                           if big is not None else ""))
        instr, arena = TFLM_CMSIS_NN[name]
        rows.append(f"{name:5} {'TFLM+CMSIS-NN M55':18} {'int8':6} {'':>8} {'':>6} {'':>6} {'':>5} {instr:>10,} "
                    f"{'':>8} {'':>7} {arena:>8,}")
        if a.board == "mps2_an386":
            rows.append(f"{name:5} {'TFLM+CMSIS-NN M4':18} {'int8':6} {'':>8} {'':>6} {'':>6} {'':>5} "
                        f"{TFLM_CMSIS_NN_M4[name]:>10,}")
    print("MLPerf Tiny: SQNR vs y_float on the test split (odd samples; 'all' = every shipped sample), "
          "task = top-1 agreement with float (kws, ic) / anomaly-score correlation (ad)"
          + ("; larger / top-1 = SQNR and top-1 agreement on the larger set (kws_synth_a 204, ic_crops_a 203; "
             "calibrated on the even shipped inputs)" if a.larger else ""))
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
