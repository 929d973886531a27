"""The PT2E flow under tabula's rules, step by step: capture a model, run the float passes, check and
fold it (:func:`float_graph`), then prepare, calibrate and convert it with a quantizer
(:func:`quantize_graph`).  :func:`tabula.quantizer.quantize` is these steps for one scheme;
:mod:`tabula.quantizer.mixed` runs them for int8, a16w8 and the chosen mix on one float graph."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    from torch.fx import GraphModule

from ..errors import QuantizationError

__all__ = ["capture", "passes", "float_graph", "quantize_graph"]


def capture(model, example_inputs: tuple) -> "GraphModule":
    """Capture ``model`` as an FX graph for PT2E.

    ``model`` may be an ``nn.Module`` (exported here with ``torch.export.export``), a
    ``torch.export.ExportedProgram`` (e.g. loaded from a ``.pt2``) or an already captured
    ``GraphModule``.  Uses ``.module(check_guards=False)`` so no ``_guards_fn`` node reaches prepare.
    """
    import torch
    from torch.fx import GraphModule

    if isinstance(model, GraphModule):
        # our own copy (quantize annotates and rewrites it), without the guard node that
        # ExportedProgram.module() adds by default (it would break prepare_pt2e)
        import copy

        gm = copy.deepcopy(model)
        guards = [n for n in gm.graph.nodes if n.op == "call_module" and str(n.target) == "_guards_fn"]
        for n in guards:
            gm.graph.erase_node(n)
        if guards:
            gm.graph.lint()
            gm.recompile()
        return gm
    if isinstance(model, torch.export.ExportedProgram):
        return model.module(check_guards=False)
    if isinstance(model, torch.nn.Module):
        model = model.eval()
        return torch.export.export(model, tuple(example_inputs)).module(check_guards=False)
    raise TypeError(f"cannot quantize a {type(model).__name__}: pass an nn.Module, ExportedProgram or GraphModule")


def _shape_error(i: int, k: int, got: tuple, want: tuple, n_in: int) -> QuantizationError:
    many = f"input {k} of " if n_in > 1 else ""
    return QuantizationError(
        f"calibration sample {i}: {many}shape {got}, but the model takes {want} per inference (its example "
        f"input); give calibration of shape [n, {', '.join(str(d) for d in want[1:])}]"
        + (" (an iterable of input tuples for several inputs)" if n_in > 1 else ""))


def _batches(calibration, example: tuple | None = None, ranges: dict | None = None) -> Iterable[tuple]:
    """Yield the calibration one input tuple at a time, each checked (:func:`_checked`; against the
    ``example`` inputs' shapes, batch dimension aside, when given); after the last, refuse an input
    position whose every value was the same (see :func:`_checked`).  ``ranges`` (a dict) receives
    each input position's observed (min, max)."""
    import numpy as np
    import torch

    lo: dict[int, float] = {}
    hi: dict[int, float] = {}
    want = [tuple(int(d) for d in e.shape) for e in example] if example is not None else None

    def checked(item: tuple, i: int) -> tuple:
        if want is not None and len(item) != len(want):
            raise QuantizationError(f"calibration sample {i} has {len(item)} input(s), the model takes {len(want)}; "
                                    "give one tuple of inputs per sample")
        out = []
        for k, v in enumerate(item):
            v = _checked(v, i, k)
            if want is not None:
                got = tuple(int(d) for d in v.shape)
                if got[1:] != want[k][1:] or len(got) != len(want[k]):
                    raise _shape_error(i, k, got, want[k], len(want))
            if v.numel():
                lo[k], hi[k] = min(lo.get(k, np.inf), float(v.min())), max(hi.get(k, -np.inf), float(v.max()))
                if ranges is not None:
                    ranges[k] = (lo[k], hi[k])
            out.append(v)
        return tuple(out)

    if isinstance(calibration, (torch.Tensor, np.ndarray)):
        if calibration.ndim == 0 or calibration.shape[0] == 0:
            raise ValueError("calibration holds no samples; give a tensor [n, ...] with n >= 1")
        for i in range(calibration.shape[0]):
            yield checked((calibration[i : i + 1],), i)
    else:
        n = 0
        for item in calibration:
            yield checked(tuple(item) if isinstance(item, (tuple, list)) else (item,), n)
            n += 1
        if n == 0:
            raise ValueError("calibration holds no samples; give at least one input")
    for k in lo:
        if lo[k] == hi[k]:
            raise QuantizationError(
                f"calibration input {k}: every value is {lo[k]:g}, so every activation range collapses to one "
                "point and the program can only output constants; calibrate on real, varied inputs")


def _checked(v, i: int, k: int):
    """Input ``k`` of calibration sample ``i`` as a float32 tensor.  QuantizationError for a complex
    array (its imaginary part would be dropped), a non-numeric one, or NaN/Inf values (observers
    would record them as the range)."""
    import numpy as np
    import torch

    where = f"calibration sample {i}, input {k}"
    if isinstance(v, np.ndarray):
        if np.iscomplexobj(v):
            raise QuantizationError(f"{where} is complex ({v.dtype}); the model takes real inputs: pass x.real "
                                    "(or split real and imaginary parts into channels)")
        if v.dtype.kind not in "fiub":
            raise QuantizationError(f"{where} has dtype {v.dtype}; give float32 numbers")
        v = torch.from_numpy(np.ascontiguousarray(v, dtype=np.float32))
    if not isinstance(v, torch.Tensor):
        raise QuantizationError(f"{where} is a {type(v).__name__}; give float tensors or numpy arrays")
    if v.is_complex():
        raise QuantizationError(f"{where} is complex ({v.dtype}); the model takes real inputs: pass x.real "
                                "(or split real and imaginary parts into channels)")
    if v.is_floating_point() and not torch.isfinite(v).all():
        raise QuantizationError(f"{where} holds NaN or Inf; clean the calibration data (e.g. np.nan_to_num) "
                                "or drop those samples")
    return v


def passes() -> list:
    """The FX passes run on the captured float graph before the unsupported-op check and
    annotation, in order: ``(name, function(gm))`` -- remove identities, decompose ops, fold constants,
    ``x * sigmoid(x)`` -> silu, unroll LSTM / GRU (:mod:`._passes`)."""
    from ._passes import float_passes

    return float_passes()


def _to_eval(gm) -> None:
    """torchao's ``move_exported_model_to_eval`` (PT2E's ``model.eval()``): it rewrites the dropout
    and batch-norm patterns of a graph, matching them by exporting a dozen pattern graphs (about 3 s
    a call); a graph with neither op is left as it is."""
    from torchao.quantization.pt2e import move_exported_model_to_eval

    from ..fx import canonical_op

    if any(n.op == "call_function" and ("dropout" in canonical_op(n.target) or "batch_norm" in canonical_op(n.target))
           for n in gm.graph.nodes):
        move_exported_model_to_eval(gm)


def float_graph(model, example_inputs: tuple, scheme: str | None = "int8", check: bool = True) -> "GraphModule":
    """The float graph PT2E annotates: ``model`` captured (:func:`capture`), the :func:`passes` run,
    every op checked (:func:`tabula.quantizer.annotator.check_supported`, for ``scheme``'s dtype; None:
    the strictest), NaN/Inf weights refused and every BatchNorm folded.  Raises as :func:`quantize`.
    ``check=False``: no op check (and no torchao import, about 1 s): the float graph of a model already
    quantized, whose node names the report matches IR tensors to (:mod:`tabula.report.layers`)."""
    import torch

    from .batch_norm import fold_batch_norms

    gm = capture(model, example_inputs)
    for _, run_pass in passes():
        run_pass(gm)  # identities first: a clone between a conv and its BatchNorm or ReLU must not hide the pair
    if check:
        from .annotator import check_supported

        check_supported(gm, scheme)

    def check_finite(when: str) -> None:
        for name, p in list(gm.named_parameters()) + list(gm.named_buffers()):
            if p.is_floating_point() and not torch.isfinite(p).all():
                raise ValueError(f"weight {name!r} contains NaN or Inf{when}; fix the model before quantizing")

    check_finite("")
    fold_batch_norms(gm)  # before prepare_pt2e: the folded weights are what get observed and quantized
    check_finite(" after folding BatchNorm into it (a running_var + eps of 0?)")
    return gm


def quantize_graph(gm, quantizer, example_inputs: tuple, calibration) -> "GraphModule":
    """PT2E on a :func:`float_graph`: ``prepare_pt2e(gm, quantizer)``, one forward per calibration
    sample (checked as :func:`_batches` does), ``convert_pt2e``, then :func:`tabula.quantizer.grids.check_grids`.
    ``gm`` itself is annotated and rewritten (pass a copy to keep it).  Raises as :func:`quantize`."""
    import numpy as np
    import torch
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    from ..progress import bar
    from .annotator import FiniteHistogramObserver

    prepared = prepare_pt2e(gm, quantizer)
    _to_eval(prepared)
    n = 0
    ranges: dict[int, tuple[float, float]] = {}
    example = tuple(e for e in example_inputs if isinstance(e, torch.Tensor))
    try:
        total = len(calibration) if isinstance(calibration, (torch.Tensor, np.ndarray, list, tuple)) else None
    except TypeError:
        total = None
    for m in prepared.modules():  # a known count below min_max_below: the observers keep min/max only
        if isinstance(m, FiniteHistogramObserver):
            m.expected = total
    with torch.no_grad(), bar(total, "calibration", "sample") as shown:
        for args in _batches(calibration, example if len(example) == len(example_inputs) else None, ranges):
            shown.update()
            try:
                prepared(*args)
            except (RuntimeError, ValueError, TypeError, IndexError) as e:  # torch's own shape or dtype check
                first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                raise QuantizationError(f"calibration sample {n} does not run through the model ({first}); give "
                                        "inputs like the example inputs the model was exported with") from None
            n += 1
    # an observer shared by several edges (a cat's inputs) is called once per edge: what decides
    # min/max vs histogram is the number of calibration inputs
    for m in prepared.modules():
        if isinstance(m, FiniteHistogramObserver):
            m.inputs = n
    converted = convert_pt2e(prepared)
    _to_eval(converted)
    from .grids import check_grids

    check_grids(converted, ranges)  # grids the integer program cannot hold: refused here, naming the input
    return converted
