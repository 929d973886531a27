"""The ExecuTorch 1.5.1 side of ``benchmarks/coverage.py``: run in ExecuTorch's own venv (torch 2.13), never
imported by tabula.

    /work/et-venv/bin/python benchmarks/_coverage_executorch.py OUT_DIR NAME [NAME ...]

For each model (``coverage_models.py``: the same classes, seeds, weights -- loaded from
``OUT_DIR/<name>/weights.pt`` -- and inputs ``OUT_DIR/<name>/inputs.npz`` as tabula's run): the Arm
backend's TOSA INT quantizer (``TOSAQuantizer`` on ``TOSA-1.0+INT``, ``get_symmetric_quantization_config``
per channel: int8 activations and weights) through PT2E prepare / calibrate / convert, its quantized
simulation run on the test inputs, and the lowering through ``to_edge_transform_and_lower`` with the
TOSA partitioner to count what is delegated.  Writes ``OUT_DIR/<name>/executorch.json``:
``{"sqnr_db", "delegated", "not_delegated" | "error"}``.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import coverage_models  # noqa: E402


def sqnr_db(ref: np.ndarray, got: np.ndarray) -> float:
    noise = float(np.sum((ref.astype(np.float64) - got) ** 2))
    return float("inf") if noise == 0 else 10 * np.log10(float(np.sum(ref.astype(np.float64) ** 2)) / noise)


def run(out_dir: Path, name: str) -> dict:
    from executorch.backends.arm.quantizer import TOSAQuantizer, get_symmetric_quantization_config
    from executorch.backends.arm.tosa.specification import TosaSpecification
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    d = out_dir / name
    model, _, _ = coverage_models.make(name)
    model.load_state_dict(torch.load(d / "weights.pt"))
    data = np.load(d / "inputs.npz")
    calib, test = torch.from_numpy(data["calib"]), torch.from_numpy(data["test"])
    spec = TosaSpecification.create_from_string("TOSA-1.0+INT")
    quantizer = TOSAQuantizer(spec)
    quantizer.set_global(get_symmetric_quantization_config(is_per_channel=True))
    graph = torch.export.export(model, (calib[:1],)).module()
    prepared = prepare_pt2e(graph, quantizer)
    with torch.no_grad():
        for i in range(len(calib)):
            prepared(calib[i : i + 1])
        converted = convert_pt2e(prepared)
        ref = torch.cat([model(test[i : i + 1]) for i in range(len(test))]).numpy()
        sim = torch.cat([converted(test[i : i + 1]) for i in range(len(test))]).numpy()
    out = {"sqnr_db": round(sqnr_db(ref, sim), 2)}
    try:
        from executorch.backends.arm.tosa.compile_spec import TosaCompileSpec
        from executorch.backends.arm.tosa.partitioner import TOSAPartitioner
        from executorch.exir import to_edge_transform_and_lower

        ep = torch.export.export(converted, (calib[:1],))
        edge = to_edge_transform_and_lower(ep, partitioner=[TOSAPartitioner(TosaCompileSpec(spec))])
        g = edge.exported_program().graph
        calls = [n for n in g.nodes if n.op == "call_function"]
        out["delegated"] = sum("executorch_call_delegate" in str(n.target) for n in calls)
        names = [getattr(n.target, "__name__", str(n.target)) for n in calls]
        out["not_delegated"] = sorted({m for m in names if "call_delegate" not in m and "getitem" not in m
                                       and "quantize" not in m})
    except Exception as e:  # the lowering is reported, the simulation's SQNR stands
        out["lowering_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    return out


def main() -> None:
    out_dir = Path(sys.argv[1])
    for name in sys.argv[2:]:
        try:
            res = run(out_dir, name)
        except Exception as e:
            res = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"}
        (out_dir / name / "executorch.json").write_text(json.dumps(res))
        print(name, res, flush=True)


if __name__ == "__main__":
    main()
