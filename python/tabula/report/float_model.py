"""The float model's activations, node by node (torch): what :mod:`tabula.report.layers` compares the
integer program with.  The graph is the one tabula quantizes (:func:`tabula.quantizer.float_graph`), run
by an FX interpreter that keeps the value of every node asked for, one sample at a time (batch 1, as
the device runs)."""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

__all__ = ["FloatModel"]


class FloatModel:
    """The float graph of ``model`` (an ExportedProgram, ``nn.Module`` or captured GraphModule; batch-1
    ``example_inputs``) with the value shape of every node (:attr:`shapes`, PyTorch layout), and
    :meth:`activations` over samples.

    Raises:
        ValueError: NaN or Inf in the weights (:func:`tabula.quantizer.float_graph`).
    """

    def __init__(self, model, example_inputs: tuple):
        import torch

        from ..fx import fake_value
        from ..quantizer import float_graph

        self.gm = float_graph(model, tuple(example_inputs), check=False)
        self.shapes: dict[str, tuple] = {}
        for n in self.gm.graph.nodes:
            v = fake_value(n)
            if isinstance(v, torch.Tensor) and v.is_floating_point():
                self.shapes[n.name] = tuple(int(d) for d in v.shape)

    def activations(self, inputs: list[np.ndarray], names: set[str]) -> Iterator[dict[str, np.ndarray]]:
        """For each sample ``i`` of ``inputs`` (one float array ``[n, ...]`` per model input, PyTorch
        layout) the values of the nodes ``names`` as float64 numpy arrays (batch 1)."""
        import torch
        from torch.fx import Interpreter

        keep = set(names)

        class _Capture(Interpreter):
            def run_node(self, n):
                value = super().run_node(n)
                if n.name in keep and isinstance(value, torch.Tensor):
                    self.seen[n.name] = value.detach().to(torch.float64).numpy().copy()
                return value

        n = len(inputs[0]) if inputs else 0
        with torch.no_grad():
            for i in range(n):
                run = _Capture(self.gm)
                run.seen = {}
                run.run(*[torch.from_numpy(np.ascontiguousarray(x[i : i + 1], np.float32)) for x in inputs])
                yield run.seen


#: The weight layout of each weighted IR op against PyTorch's, as a function of the torch weight.
def _to_ir(op: str, w, ir_shape):
    import torch

    if op == "FULLY_CONNECTED":
        return w
    if op == "CONV2D":
        if w.dim() == 3:  # Conv1d [O, I, K] -> the IR's [O, 1, K, I]
            w = w.unsqueeze(2)
        return w.permute(0, 2, 3, 1)
    if op == "DEPTHWISE_CONV2D":  # [C*M, 1, KH, KW] -> [KH, KW, C, M]
        kh, kw, c, m = ir_shape
        if w.dim() == 3:
            w = w.unsqueeze(2)
        return w.reshape(c, m, kh, kw).permute(2, 3, 0, 1)
    return torch.empty(0)


def weight_errors(graph, fm: FloatModel) -> dict[str, dict]:
    """Per weighted IR op (CONV2D, DEPTHWISE_CONV2D, FULLY_CONNECTED with constant weights), keyed by
    its index as text: ``weight_sqnr_db`` of its int8 weights (dequantized with their per-channel scales)
    against the float graph's weights of the node the op was lowered from, and ``node``.  Ops whose float
    weights cannot be matched element for element (a grouped conv split per group, a BatchNorm turned
    into a depthwise conv) are left out."""
    import torch

    from .analysis import _split_source

    nodes = {n.name: n for n in fm.gm.graph.nodes}
    out = {}
    for i, op in enumerate(graph.ops):
        if op.op not in ("CONV2D", "DEPTHWISE_CONV2D", "FULLY_CONNECTED") or len(op.inputs) < 2:
            continue
        wt = graph.tensors[op.inputs[1]]
        if not wt.const or not isinstance(wt.scale, list):
            continue
        node = nodes.get(_split_source(op.source)[1])
        if node is None or len(node.args) < 2 or getattr(node.args[1], "op", None) != "get_attr":
            continue
        obj = fm.gm
        try:
            for part in node.args[1].target.split("."):
                obj = getattr(obj, part)
            w = _to_ir(op.op, obj.detach().to(torch.float64), tuple(wt.shape)).numpy()
        except (AttributeError, RuntimeError):
            continue
        q = np.asarray(graph.constants[wt.name], np.float64)
        if w.shape != q.shape:
            continue
        s = np.asarray(wt.scale, np.float64)
        dq = q * (s.reshape(-1, *([1] * (q.ndim - 1))) if op.op != "DEPTHWISE_CONV2D" else s.reshape(q.shape[2], q.shape[3]))
        noise = float(((w - dq) ** 2).sum())
        signal = float((w * w).sum())
        sq = float("inf") if noise == 0 else (None if signal == 0 else round(10 * np.log10(signal / noise), 2))
        out[str(i)] = {"node": node.name, "weight_sqnr_db": sq}
    return out
