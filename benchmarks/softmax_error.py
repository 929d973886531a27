"""Error of tabula's integer softmax over the random and edge sets, in output LSB (no timing).

    python benchmarks/softmax_error.py [seed]

For int8 and int16 (a16w8), per row length (1, 2, 10, 12, 1000), over every set of
tabula.report.softmax_cases (uniform codes, normal logits, ties, all-equal rows, one huge logit,
saturated rows, alternating extremes) and every input scale (tiny to large): the largest error of what
the device computes (qmath.softmax_apply, bit-exact with the C kernel) against PyTorch's
q(softmax(dq(x))) (float32), against the exact softmax (float64) and against it rounded; PyTorch's own
error against the exact softmax; and the range of the bound the build proves (qmath.build_softmax_plan).
Then the same for the NPU form (qmath.build_softmax_npu_plan: no INTDIV, a Newton-Raphson reciprocal; what
NPU targets lower a softmax to): its error against PyTorch and the exact softmax, the share of outputs that
differ from the CPU form's, and its proven bound.
"""
from __future__ import annotations

import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from tabula.qmath import build_softmax_plan, softmax_apply  # noqa: E402
from tabula.qmath.softmax_npu import build_softmax_npu_plan, softmax_npu_apply  # noqa: E402
from tabula.report import softmax_cases as cases  # noqa: E402


def main(seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    print(f"{'dtype':<6} {'row':>5}  {'vs torch':>8} {'vs exact':>8} {'vs round':>8} {'torch vs exact':>14}  proven bound"
          f"    | NPU form: {'vs torch':>8} {'vs exact':>8} {'differ':>7}  proven bound  steps")
    for dtype in ("int8", "int16"):
        s_out, zp_out, qmin, qmax = cases.output_grid(dtype)
        for length in cases.LENGTHS:
            w_t = w_e = w_r = w_own = n_t = n_e = 0.0
            differ = total = 0
            bounds, n_bounds, steps = [], [], []
            for scale in cases.SCALES[dtype]:
                scale = float(np.float32(scale))
                plan = build_softmax_plan(scale, dtype, length, s_out, zp_out)
                npu = build_softmax_npu_plan(scale, dtype, length, s_out, zp_out)
                bounds.append(plan.error_bound_lsb)
                n_bounds.append(npu.error_bound_lsb)
                steps.append(npu.steps)
                for x in cases.rows(dtype, length, scale, rng).values():
                    y = softmax_apply(plan, x).astype(np.int64)
                    yn = softmax_npu_apply(npu, x).astype(np.int64)
                    differ += int((y != yn).sum())
                    total += y.size
                    t = cases.torch_reference(x, scale, cases.INPUT_ZERO_POINT[dtype], dtype).astype(np.int64)
                    ex = cases.exact_reference(x, scale)
                    exc = np.clip(ex, qmin, qmax)
                    w_t = max(w_t, np.abs(y - t).max())
                    w_e = max(w_e, np.abs(y - exc).max())
                    w_r = max(w_r, np.abs(y - np.clip(np.rint(ex), qmin, qmax)).max())
                    w_own = max(w_own, np.abs(t - exc).max())
                    n_t = max(n_t, np.abs(yn - t).max())
                    n_e = max(n_e, np.abs(yn - exc).max())
            print(f"{dtype:<6} {length:>5}  {w_t:>8.0f} {w_e:>8.3f} {w_r:>8.0f} {w_own:>14.3f}  "
                  f"{min(bounds):.3f} .. {max(bounds):.3f}    |           {n_t:>8.0f} {n_e:>8.3f} {differ / total:>7.2%}  "
                  f"{min(n_bounds):.3f} .. {max(n_bounds):.3f}  {min(steps)}-{max(steps)}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
