"""Report: accuracy and fidelity figures, ``results.json``, and the summary table."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

__all__ = ["accuracy", "sqnr_db", "write_results", "print_table"]


def accuracy(logits: np.ndarray, labels: np.ndarray | None) -> float | None:
    """Top-1 accuracy of ``logits`` [n, classes] against int ``labels`` [n]; None without labels."""
    if labels is None or len(labels) == 0:
        return None
    return float((np.asarray(logits).reshape(len(labels), -1).argmax(1) == np.asarray(labels)).mean())


def sqnr_db(reference: np.ndarray, test: np.ndarray) -> float | None:
    """Signal-to-quantization-noise ratio in dB: ``10 log10(sum(ref^2) / sum((ref - test)^2))``.
    ``inf`` when identical; None when empty."""
    r = np.asarray(reference, np.float64).reshape(-1)
    t = np.asarray(test, np.float64).reshape(-1)
    if r.size == 0:
        return None
    noise = float(((r - t) ** 2).sum())
    if noise == 0.0:
        return float("inf")
    return round(10.0 * np.log10(float((r**2).sum()) / noise), 2)


def write_results(path: str | Path, results: dict) -> None:
    """Write ``results`` as JSON, atomically (temporary file + rename)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    tmp.replace(p)


_DECIMALS = {"sqnr_db_vs_float": 1, "wall_seconds": 2}


def _fmt(v, key: str = "") -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{_DECIMALS.get(key, 4)}f}"
    return str(v)


def print_table(results: dict) -> None:
    """Print the headline figures of a run as a two-column table."""
    keys = [
        "board", "runner", "n_samples", "float_accuracy", "reference_accuracy", "device_accuracy",
        "bit_exact_mismatches", "sqnr_db_vs_float", "instructions_per_inference", "flash_bytes",
        "ram_bytes", "arena_bytes", "wall_seconds",
    ]
    width = max(len(k) for k in keys)
    print("tabula results")
    for k in keys:
        if k in results:
            print(f"  {k:<{width}}  {_fmt(results[k], k)}")
    for o in results.get("outputs") or []:  # several model outputs: one line each
        print(f"  output {o['index']} {str(o['shape']):<18} bit_exact_mismatches {o['bit_exact_mismatches']}, "
              f"sqnr_db_vs_float {_fmt(o['sqnr_db_vs_float'], 'sqnr_db_vs_float')}")
    for t in results.get("tables") or []:
        form = t.get("form", "single")
        form = "" if form == "single" else f" ({form}, {t.get('tables', '?')} tables)"
        print(f"  TABLE {t.get('function', '?'):<20} {t.get('dtype', '')}{form}: max {t.get('max_lsb', float('nan')):.3f} "
              f"LSB, mean {t.get('mean_lsb', float('nan')):.3f} LSB  ({t.get('source', '')})")
