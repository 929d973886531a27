"""Issue 25: every aten op ExecuTorch 1.5.1's Arm backend takes in the TOSA 1.0 INT profile, against tabula.

    python benchmarks/op_coverage.py                      # every op: list, build and run the covered ones
    python benchmarks/op_coverage.py --no-build           # coverage only (seconds)
    python benchmarks/op_coverage.py --ops aten.abs.default,aten.mean.dim --json out.json

The ops are data (``benchmarks/executorch_tosa_int_ops.toml``: the INT support list, the targets of the support
checks, the ops decomposed before quantization; its header names the source commit).  Each op has a one-op
model in :data:`CASES` -- the PyTorch call that reaches it, on a seeded random input of a range that suits it --
and is, for tabula:

* **covered**: its model's captured float graph, after tabula's passes, holds only ops with a rule in
  ``tabula.rules`` and a lowering (the ``class`` column: the rule's class), and no lowering refuses a node of
  it (the same check ``tabula.quantize`` makes before calibrating).  An op ExecuTorch lists may reach tabula
  as other aten ops (``F.pad`` is ``aten.pad`` in the exported graph, ``constant_pad_nd`` only when called as
  such): the model is the call, the check is on what ``torch.export`` gives.  Constant makers (``arange``,
  ``eye``, ...) are covered when folded into a constant; identities (``alias``, ``detach``, ``clone``) when
  removed.
* **refused**: the ops tabula's own error names (each as its line says it: ``aten.div by an activation
  (...)``), with the category of :data:`REASONS` where one is stated.  An op that lands later is found
  covered by the same run.

For each covered op, int8 and a16w8: quantize (16 calibration inputs and the 8 test inputs, so no test value
falls outside a calibrated grid and the error is the op's), lower, generate the C, build it for the
host board (``_host_firmware.py``) and run the 8 test inputs on it: ``exact`` = the firmware's outputs equal the
Python integer reference's (every element); ``LSB`` = max |dequantized output - float model| in output LSB and
the SQNR vs float; for an elementwise op of one activation also ``q(f(dq(x)))`` = max |output code - the code
of the float function of the dequantized input|, the op's own rounding (the goal: <= 1 LSB).  Masks and indices:
the number of elements that differ from the float model's.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import tomllib
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

os.environ.setdefault("OMP_NUM_THREADS", "1")

from _bench import ROOT  # noqa: E402  (this checkout's python/ first on sys.path)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

OPS_FILE = ROOT / "benchmarks" / "executorch_tosa_int_ops.toml"
SCHEMES = ("int8", "a16w8")
N_CALIB, N_TEST = 16, 8


def executorch_ops(path: Path = OPS_FILE) -> dict[str, str]:
    """ExecuTorch's INT ops from ``path``: op name -> where ExecuTorch takes it (``support list``, a support
    check's file, a decomposition pass's file), in the file's order."""
    data = tomllib.loads(path.read_text())
    ops = {op: "support list" for op in data["support_list"]["ops"]}
    for group in ("support_checks", "decomposed_before_quantization"):
        for file, names in data[group].items():
            ops.update({op: file for op in names if op not in ops})
    return ops


@dataclass(frozen=True)
class Case:
    """One op's model: ``make()`` -> an ``nn.Module`` of one float input of ``shape``, uniform in [lo, hi];
    ``unary``: elementwise on one activation (also measured against q(f(dq(x))))."""

    make: Callable[[], nn.Module]
    shape: tuple = (1, 8, 16)
    lo: float = -3.0
    hi: float = 3.0
    unary: bool = False
    note: str = ""


class Fn(nn.Module):
    """A function of the input as a module (constants it builds are lifted or folded by export)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


class First(nn.Module):
    """The first output of a module that returns a tuple (a recurrent layer's output sequence)."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(x)[0]


def fn(f, shape=(1, 8, 16), lo=-3.0, hi=3.0, note="") -> Case:
    return Case(lambda: Fn(f), shape, lo, hi, False, note)


def un(f, lo=-3.0, hi=3.0, note="") -> Case:
    return Case(lambda: Fn(f), (1, 8, 16), lo, hi, True, note)


def mod(make, shape=(1, 8, 16), lo=-3.0, hi=3.0, note="") -> Case:
    def seeded():
        torch.manual_seed(0)
        m = make()
        for b in m.buffers():  # BatchNorm statistics: not the identity
            if b.is_floating_point():
                b.copy_(torch.rand_like(b) + 0.5)
        return m.eval()
    return Case(seeded, shape, lo, hi, False, note)


class Embed(nn.Module):
    """An embedding looked up at indices the model computes (tabula's inputs are float: no index input)."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(16, 4)

    def forward(self, x):
        return self.emb(x.argmax(-1))


IMG = (1, 4, 8, 8)
i32 = torch.int32
A, B = (lambda x: x[:, :4]), (lambda x: x[:, 4:])  # two activations of one input: rows 0-3 and 4-7

#: One model per op (ExecuTorch's edge name), then ops beyond ExecuTorch's lists (``EXTRA``).
CASES: dict[str, Case] = {
    # ---- support list ----------------------------------------------------------------------------
    "aten.__lshift__.Scalar": fn(lambda x: x.round().to(i32) << 2),
    "aten._adaptive_avg_pool2d.default": mod(lambda: nn.AdaptiveAvgPool2d(2), IMG),
    "aten.abs.default": un(torch.abs),
    "aten.acos.default": un(torch.acos, -1.0, 1.0),
    "aten.acosh.default": un(torch.acosh, 1.0, 4.0),
    "aten.add.Tensor": fn(lambda x: A(x) + B(x)),
    "aten.alias_copy.default": fn(lambda x: torch.relu(torch.ops.aten.alias(x)), note="relu after it"),
    "aten.amax.default": fn(lambda x: x.amax(-1)),
    "aten.amin.default": fn(lambda x: x.amin(-1)),
    "aten.any.default": fn(lambda x: (x > 2.5).any()),
    "aten.any.dim": fn(lambda x: (x > 2.5).any(-1)),
    "aten.any.dims": fn(lambda x: (x > 2.5).any((1, 2))),
    "aten.arange.start_step": fn(lambda x: x + torch.arange(0.0, 1.6, 0.1)),
    "aten.argmax.default": fn(lambda x: x.argmax(-1)),
    "aten.asin.default": un(torch.asin, -1.0, 1.0),
    "aten.asinh.default": un(torch.asinh),
    "aten.atan.default": un(torch.atan),
    "aten.atanh.default": un(torch.atanh, -0.95, 0.95),
    "aten.bitwise_and.Scalar": fn(lambda x: (x > 0) & True),
    "aten.bitwise_and.Tensor": fn(lambda x: (x > 0) & (x < 1)),
    "aten.bitwise_left_shift.Tensor": fn(lambda x: torch.bitwise_left_shift(x.round().to(i32), torch.tensor(2))),
    "aten.bitwise_not.default": fn(lambda x: ~(x > 0)),
    "aten.bitwise_or.Scalar": fn(lambda x: (x > 0) | False),
    "aten.bitwise_or.Tensor": fn(lambda x: (x < -1) | (x > 1)),
    "aten.bitwise_xor.Scalar": fn(lambda x: (x > 0) ^ True),
    "aten.bitwise_xor.Tensor": fn(lambda x: (x > 0) ^ (x > 1)),
    "aten.bmm.default": fn(lambda x: torch.bmm(x[:, :, :8], x[:, :, 8:].transpose(1, 2))),
    "aten.cat.default": fn(lambda x: torch.cat([B(x), A(x)], 1)),
    "aten.ceil.default": un(torch.ceil),
    "aten.celu.default": un(F.celu),
    "aten.clamp.Tensor": fn(lambda x: torch.clamp(x, torch.tensor(-1.0), torch.tensor(1.5))),
    "aten.clamp.default": un(lambda x: torch.clamp(x, -1.0, 1.5)),
    "aten.constant_pad_nd.default": fn(lambda x: torch.constant_pad_nd(x, (1, 2))),
    "aten.copy.default": fn(lambda x: torch.zeros_like(x).copy_(x)),
    "aten.cos.default": un(torch.cos),
    "aten.cosh.default": un(torch.cosh, -2.0, 2.0),
    "aten.cumsum.default": fn(lambda x: torch.cumsum(x, -1)),
    "aten.detach_copy.default": fn(lambda x: torch.relu(x.detach()), note="relu after it"),
    "aten.div.Tensor_mode": un(lambda x: torch.div(x, 0.75, rounding_mode="floor")),
    "aten.elu.default": un(F.elu),
    "aten.eq.Scalar": fn(lambda x: x == 0.0),
    "aten.eq.Tensor": fn(lambda x: A(x) == B(x)),
    "aten.erf.default": un(torch.erf),
    "aten.erfinv.default": un(torch.erfinv, -0.95, 0.95),
    "aten.exp.default": un(torch.exp, -3.0, 1.0),
    "aten.expand_copy.default": fn(lambda x: x.expand(1, 8, 16), (1, 1, 16)),
    "aten.expm1.default": un(torch.expm1, -3.0, 1.0),
    "aten.eye.default": fn(lambda x: x[:, :, :8] + torch.eye(8)),
    "aten.flip.default": fn(lambda x: x.flip(-1)),
    "aten.floor.default": un(torch.floor),
    "aten.full.default": fn(lambda x: x + torch.full((1, 8, 16), 0.5)),
    "aten.full_like.default": fn(lambda x: x + torch.full_like(x, 0.5)),
    "aten.ge.Scalar": fn(lambda x: x >= 0.5),
    "aten.ge.Tensor": fn(lambda x: A(x) >= B(x)),
    "aten.gelu.default": un(F.gelu),
    "aten.gt.Scalar": fn(lambda x: x > 0.5),
    "aten.gt.Tensor": fn(lambda x: A(x) > B(x)),
    "aten.hardsigmoid.default": un(F.hardsigmoid),
    "aten.hardswish.default": un(F.hardswish),
    "aten.hardtanh.default": un(F.hardtanh),
    "aten.le.Scalar": fn(lambda x: x <= 0.5),
    "aten.le.Tensor": fn(lambda x: A(x) <= B(x)),
    "aten.leaky_relu.default": un(lambda x: F.leaky_relu(x, 0.1)),
    "aten.linear.default": mod(lambda: nn.Linear(16, 8)),
    "aten.linspace.default": fn(lambda x: x * torch.linspace(-1.0, 1.0, 16)),
    "aten.log.default": un(torch.log, 0.05, 4.0),
    "aten.log10.default": un(torch.log10, 0.05, 4.0),
    "aten.log1p.default": un(torch.log1p, -0.9, 3.0),
    "aten.logical_and.default": fn(lambda x: torch.logical_and(x > 0, x < 1)),
    "aten.logical_not.default": fn(lambda x: torch.logical_not(x > 0)),
    "aten.logical_or.default": fn(lambda x: torch.logical_or(x < -1, x > 1)),
    "aten.logical_xor.default": fn(lambda x: torch.logical_xor(x > 0, x > 1)),
    "aten.lt.Scalar": fn(lambda x: x < 0.5),
    "aten.lt.Tensor": fn(lambda x: A(x) < B(x)),
    "aten.masked_fill.Scalar": fn(lambda x: x.masked_fill(x > 1.0, 0.0)),
    "aten.maximum.default": fn(lambda x: torch.maximum(A(x), B(x))),
    "aten.mean.dim": fn(lambda x: x.mean(-1)),
    "aten.minimum.default": fn(lambda x: torch.minimum(A(x), B(x))),
    "aten.mm.default": fn(lambda x: torch.mm(x[0, :, :8], x[0, :, 8:].t())),
    "aten.mul.Tensor": fn(lambda x: A(x) * B(x)),
    "aten.neg.default": un(torch.neg),
    "aten.pad.default": fn(lambda x: F.pad(x, (1, 2))),
    "aten.permute_copy.default": fn(lambda x: x.permute(0, 2, 1)),
    "aten.pow.Tensor_Scalar": un(lambda x: torch.pow(x, 2.0)),
    "aten.pow.Tensor_Tensor": fn(lambda x: torch.pow(A(x), B(x)), lo=0.5, hi=2.0),
    "aten.reciprocal.default": un(torch.reciprocal, 0.2, 4.0),
    "aten.relu.default": un(torch.relu),
    "aten.remainder.Scalar": un(lambda x: torch.remainder(x, 0.75)),
    "aten.remainder.Tensor": fn(lambda x: torch.remainder(A(x), B(x)), lo=0.5, hi=3.0),
    "aten.repeat.default": fn(lambda x: x.repeat(1, 2, 1)),
    "aten.round.default": un(torch.round),
    "aten.rsqrt.default": un(torch.rsqrt, 0.1, 4.0),
    "aten.scalar_tensor.default": fn(lambda x: x * torch.scalar_tensor(0.5)),
    "aten.select_copy.int": fn(lambda x: x[:, 2]),
    "aten.selu.default": un(F.selu),
    "aten.sigmoid.default": un(torch.sigmoid),
    "aten.sign.default": un(torch.sign),
    "aten.silu.default": un(F.silu),
    "aten.sin.default": un(torch.sin),
    "aten.sinh.default": un(torch.sinh, -2.0, 2.0),
    "aten.split_copy.Tensor": fn(lambda x: torch.split(x, 4, 1)),
    "aten.split_with_sizes_copy.default": fn(lambda x: torch.split(x, [3, 5], 1)),
    "aten.squeeze_copy.dims": fn(lambda x: x.squeeze((2,)), (1, 8, 1, 16)),
    "aten.sub.Tensor": fn(lambda x: A(x) - B(x)),
    "aten.tan.default": un(torch.tan, -1.2, 1.2),
    "aten.tanh.default": un(torch.tanh),
    "aten.unsqueeze_copy.default": fn(lambda x: x.unsqueeze(1)),
    "aten.view_copy.default": fn(lambda x: x.view(1, 128)),
    # ---- support checks --------------------------------------------------------------------------
    "aten.__rshift__.Scalar": fn(lambda x: x.round().to(i32) >> 1),
    "aten.as_strided_copy.default": fn(lambda x: torch.as_strided(x, (1, 8, 8), (128, 16, 2))),
    "aten.avg_pool2d.default": mod(lambda: nn.AvgPool2d(2), IMG),
    "aten.bitwise_right_shift.Tensor": fn(lambda x: torch.bitwise_right_shift(x.round().to(i32), torch.tensor(1))),
    "aten.conv_transpose2d.input": mod(lambda: nn.ConvTranspose2d(4, 4, 3, stride=2), IMG),
    "aten.convolution.default": mod(lambda: nn.Conv2d(4, 8, 3, padding=1), IMG),
    "aten.embedding.default": mod(lambda: Embed(), note="indices from argmax (tabula's inputs are float); the int8 "
                                  "error: argmax ties of the int8 codes pick other rows"),
    "aten.gather.default": fn(lambda x: torch.gather(x, -1, torch.tensor([[[3, 0, 5, 1]] * 8]))),
    "aten.index.Tensor": fn(lambda x: x[:, :, torch.tensor([0, 3, 5])]),
    "aten.index_put.default": fn(lambda x: x.index_put((torch.tensor([0]), torch.tensor([1, 3])), torch.tensor(0.5))),
    "aten.index_select.default": fn(lambda x: x.index_select(2, torch.tensor([0, 3, 5]))),
    "aten.max_pool2d.default": mod(lambda: nn.MaxPool2d(2), IMG),
    "aten.max_pool2d_with_indices.default": fn(lambda x: F.max_pool2d(x, 2, return_indices=True)[0], IMG),
    "aten.slice_copy.Tensor": fn(lambda x: x[:, 2:6]),
    "aten.sum.dim_IntList": fn(lambda x: x.sum(-1)),
    "aten.unfold_copy.default": fn(lambda x: x.unfold(-1, 4, 2)),
    "aten.upsample_bilinear2d.vec": fn(lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"), IMG),
    "aten.upsample_nearest2d.vec": fn(lambda x: F.interpolate(x, scale_factor=2, mode="nearest"), IMG),
    "aten.where.self": fn(lambda x: torch.where(A(x) > B(x), A(x), B(x))),
    "dim_order_ops._clone_dim_order.default": fn(lambda x: torch.relu(x.clone()), note="relu after it"),
    "dim_order_ops._to_dim_order_copy.default": fn(lambda x: x.to(torch.float16)),
    # ---- decomposed before quantization ----------------------------------------------------------
    "aten._safe_softmax.default": fn(lambda x: torch.ops.aten._safe_softmax(x, -1)),
    "aten.addmm.default": fn(lambda x: torch.addmm(torch.full((8,), 0.1), x[0], torch.eye(16)[:, :8])),
    "aten.batch_norm.default": mod(lambda: nn.BatchNorm2d(4), IMG),
    "aten.cosine_similarity.default": fn(lambda x: F.cosine_similarity(A(x), B(x), dim=-1)),
    "aten.div.Tensor": fn(lambda x: A(x) / B(x), lo=0.5, hi=3.0, note="by an activation"),
    "aten.einsum.default": fn(lambda x: torch.einsum("bij,bkj->bik", A(x), B(x))),
    "aten.floor_divide.default": un(lambda x: torch.floor_divide(x, 0.5)),
    "aten.glu.default": fn(lambda x: F.glu(x, -1)),
    "aten.group_norm.default": mod(lambda: nn.GroupNorm(2, 4), IMG),
    "aten.gru.input": mod(lambda: First(nn.GRU(16, 8, batch_first=True))),
    "aten.index_copy.default": fn(lambda x: x.index_copy(1, torch.tensor([0, 2]), torch.zeros(1, 2, 16))),
    "aten.layer_norm.default": mod(lambda: nn.LayerNorm(16)),
    "aten.linalg_vector_norm.default": fn(lambda x: torch.linalg.vector_norm(x, dim=-1)),
    "aten.log_softmax.int": fn(lambda x: F.log_softmax(x, -1)),
    "aten.logit.default": un(torch.logit, 0.05, 0.95),
    "aten.lstm.input": mod(lambda: First(nn.LSTM(16, 8, batch_first=True))),
    "aten.matmul.default": fn(lambda x: x[:, :, :8] @ x[:, :, 8:].transpose(1, 2)),
    "aten.max.dim": fn(lambda x: x.max(-1).values),
    "aten.min.dim": fn(lambda x: x.min(-1).values),
    "aten.ne.Tensor": fn(lambda x: A(x) != B(x)),
    "aten.prelu.default": mod(lambda: nn.PReLU(8)),
    "aten.rnn_relu.input": mod(lambda: First(nn.RNN(16, 8, nonlinearity="relu", batch_first=True))),
    "aten.rnn_tanh.input": mod(lambda: First(nn.RNN(16, 8, batch_first=True))),
    "aten.scaled_dot_product_attention.default": fn(lambda x: F.scaled_dot_product_attention(x, x, x)),
    "aten.select_scatter.default": fn(lambda x: torch.select_scatter(x, torch.zeros(1, 16), 1, 0)),
    "aten.slice_scatter.default": fn(lambda x: torch.slice_scatter(x, torch.zeros(1, 2, 16), 1, 0, 2)),
    "aten.softmax.int": fn(lambda x: F.softmax(x, -1)),
    "aten.sqrt.default": un(torch.sqrt, 0.05, 4.0),
    "aten.tril.default": fn(lambda x: torch.tril(x[:, :, :8])),
    "aten.var.correction": fn(lambda x: torch.var(x, -1)),
    "aten.var.dim": fn(lambda x: torch.var(x, -1, unbiased=False)),
}

#: Ops beyond ExecuTorch's lists that issue 25 names (reported, not counted in the figure).
EXTRA: dict[str, Case] = {
    "softsign": un(F.softsign),
    "mish": un(F.mish),
    "log2": un(torch.log2, 0.05, 4.0),
    "pixel_shuffle": mod(lambda: nn.PixelShuffle(2), (1, 8, 4, 4)),
    "pixel_unshuffle": mod(lambda: nn.PixelUnshuffle(2), (1, 2, 8, 8)),
    "normalize": fn(lambda x: F.normalize(x, dim=-1)),
    "conv_transpose2d stride 3": mod(lambda: nn.ConvTranspose2d(4, 4, 3, stride=3), IMG),
}

INTEGER = ("integer tensors: PT2E quantizes float tensors, and a float model reaches these only through a "
           "conversion to an integer dtype, which tabula refuses (its activations are quantized float32)")

#: Why tabula refuses an op, where the category is stated (else: not yet implemented).  tabula's own error line
#: is printed beside it.
REASONS: dict[str, str] = {
    **{op: INTEGER for op in ("aten.__lshift__.Scalar", "aten.__rshift__.Scalar", "aten.bitwise_left_shift.Tensor",
                              "aten.bitwise_right_shift.Tensor")},
    "dim_order_ops._to_dim_order_copy.default": "no meaning here: a conversion to another float dtype (float16) in "
                                                "an int8 / int16 model",
}


def case_of(op: str) -> Case:
    """The one-op model of ``op`` (:data:`CASES` or :data:`EXTRA`)."""
    return CASES[op] if op in CASES else EXTRA[op]


def inputs(case: Case, n: int, seed: int) -> torch.Tensor:
    """``n`` samples of ``case``'s input, uniform in [lo, hi], from ``seed``."""
    g = torch.Generator().manual_seed(seed)
    return case.lo + (case.hi - case.lo) * torch.rand((n,) + tuple(case.shape[1:]), generator=g)


def first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return (text[0] if text else type(e).__name__)[:200]


def _ops(gm) -> list[tuple[str, object]]:
    """``(name, tabula.rules.op_class)`` of every computing node of ``gm``, in order, each name once."""
    from tabula import rules

    seen: dict[str, object] = {}
    for n in gm.graph.nodes:
        name = rules.canonical_op(n.target) if n.op == "call_function" else None
        if name and name not in rules.STRUCTURAL and name not in rules.ASSERTS and name not in seen:
            seen[name] = rules.op_class(n.target)
    return list(seen.items())


def listing(op: str) -> dict:
    """``op`` against tabula's rules, without quantizing: the ops its model exports as (``exported``) and holds
    after tabula's passes (``graph``: identities removed, constants folded, rewrites made), whether each has a
    rule and a lowering (``rules``), the class of the last classified one, and whether tabula takes the model
    (``covered``: ``tabula.quantize``'s check before calibration, in int8 and a16w8); else ``reason``."""
    from tabula import rules
    from tabula.errors import UnsupportedOpError
    from tabula.quantizer.annotator import check_supported, supported
    from tabula.quantizer.flow import capture, float_graph

    case = case_of(op)
    row = {"op": op, "exported": [], "graph": [], "rules": False, "covered": False, "class": None, "reason": None}
    example = (inputs(case, 1, 0),)
    try:
        gm0 = capture(case.make(), example)
        row["exported"] = [n for n, _ in _ops(gm0)]
        gm = float_graph(gm0, example, check=False)
    except Exception as e:  # noqa: BLE001 -- export or a pass failed: that is the finding
        row["reason"] = f"capture: {first_line(e)}"
        return row
    ops = _ops(gm)
    row["graph"] = [n for n, _ in ops]
    ok = set(supported()) | rules.IDENTITY
    row["rules"] = all(n in ok for n, _ in ops)
    row["class"] = next((c.value for _, c in reversed(ops) if c is not None), None)
    try:
        for scheme in SCHEMES:
            check_supported(gm, scheme)
    except UnsupportedOpError as e:  # its op lines, each once: "aten.ceil", "aten.div (a floor division)"
        row["reason"] = "; ".join(sorted({name for name, _ in e.ops}))
        return row
    row["covered"] = True
    return row


def _outputs(value) -> list[torch.Tensor]:
    return list(value) if isinstance(value, (tuple, list)) else [value]


def build_and_run(op: str, scheme: str, out: Path, cache: Path) -> dict:
    """Quantize ``op``'s model in ``scheme`` (16 calibration inputs and the test inputs), lower it, generate and
    build the host firmware and run the 8 test inputs on it.  ``exact``: every output element equals the Python
    integer reference's; ``lsb``: max |output - float| in output LSB, ``sqnr_db`` vs float (masks and indices:
    ``differ``, the elements unlike the float model's); ``lsb_fdq``: max |output code - q(f(dq(x)))| (unary
    ops).  A stage that fails gives ``error``, its first line."""
    import tabula
    from tabula.deploy import run_on_board
    from tabula.qmath import quantize_round_half_even
    from tabula.report import sqnr_db
    from tabula.stages import generate_sources

    import _host_firmware

    case = case_of(op)
    model = case.make()
    test = inputs(case, N_TEST, 2)
    calib = torch.cat([inputs(case, N_CALIB, 1), test])  # the test inputs too: no test value is clipped by a grid
    # (on the 16 alone, a test value beyond the calibrated range saturates: a16w8 sub of two slices gave 60 dB, add 92)
    d = out / op.replace(" ", "_") / scheme
    try:
        gm = tabula.quantize(model, (calib[:1],), calib, scheme=scheme)
        program = tabula.lower(gm)
        program.save(d)
        generate_sources(d, d / "src", board="host")
        elf = _host_firmware.build(d / "src", cache)
    except Exception as e:  # noqa: BLE001 -- a stage failed on a covered op: that is the finding
        return {"error": first_line(e)}
    g = program.graph
    ints = [program.quantize_inputs(test[i : i + 1].numpy()) for i in range(N_TEST)]
    refs = [program.run_int(*xi) for xi in ints]
    session = run_on_board(elf, "host", [b"".join(a.tobytes() for a in xi) for xi in ints], log_path=d / "run.log")
    devs = [[np.frombuffer(b, dtype=r.dtype).reshape(r.shape) for b, r in zip(outs, ref)]
            for outs, ref in zip(session.outputs, refs)]
    exact = len(devs) == N_TEST and all(np.array_equal(a, b) for dv, rf in zip(devs, refs) for a, b in zip(dv, rf))
    row = {"exact": bool(exact), "lsb": 0.0, "sqnr_db": None, "differ": None, "lsb_fdq": None}
    with torch.no_grad():
        floats = [[t.numpy() for t in _outputs(model(test[i : i + 1]))] for i in range(N_TEST)]
    worst_sqnr = []
    for k, name in enumerate(g.outputs):
        t = g.tensors[name]
        want = np.concatenate([np.atleast_1d(f[k]) for f in floats])  # a 0-d output (any()): one per input
        if not np.issubdtype(want.dtype, np.floating):  # a mask or indices: compared as values
            got = np.concatenate([dv[k].reshape(t.shape) for dv in devs])
            if g.io_layout.get(name) == "NCHW":
                got = got.transpose(0, 3, 1, 2)
            row["differ"] = (row["differ"] or 0) + int((got.reshape(want.shape) != want.astype(got.dtype)).sum())
            continue
        got = np.concatenate([program.dequantize_outputs(dv)[k] for dv in devs])
        row["lsb"] = max(row["lsb"], float(np.abs(got - want).max() / t.scale))
        worst_sqnr.append(sqnr_db(want, got))
    row["sqnr_db"] = min((s for s in worst_sqnr if s is not None), default=None)
    if case.unary and row["differ"] is None:
        qi, qo = program.input_qparams[0], program.output_qparams[0]
        to = g.tensors[g.outputs[0]]
        worst = 0
        for xi, dv in zip(ints, devs):
            dq = ((xi[0].astype(np.float64) - qi.zero_point) * qi.scale).astype(np.float32)
            with torch.no_grad():
                f = model(torch.from_numpy(dq)).numpy()
            q = quantize_round_half_even(f, qo.scale, qo.zero_point, to.dtype)
            if to.qrange:
                q = np.clip(q, *to.qrange)
            worst = max(worst, int(np.abs(dv[0].astype(np.int64) - q.astype(np.int64)).max()))
        row["lsb_fdq"] = worst
    return row


def _cell(r: dict | None) -> tuple[str, str]:
    """(exact, error) cells of one scheme's result."""
    if r is None:
        return "-", "-"
    if "error" in r:
        return "error", "-"
    if r["differ"] is not None:
        err = "exact" if r["differ"] == 0 else f"{r['differ']} differ"
    else:
        err = f"{r['lsb']:.2f}"
        if r["sqnr_db"] is not None:
            err += f" ({r['sqnr_db']:.0f} dB)" if np.isfinite(r["sqnr_db"]) else " (inf dB)"
        if r["lsb_fdq"] is not None:
            err += f" q(f(dq)) {r['lsb_fdq']}"
    return ("yes" if r["exact"] else "NO"), err


def _as(row: dict) -> str:
    """"as <ops>" when the op reaches tabula under other aten names (its own, ``_copy`` dropped, is not in the
    graph after tabula's passes), else ""."""
    name = row["op"].rsplit(".", 1)[0]
    own = {name, name.removesuffix("_copy"), name.replace("dim_order_ops._clone_dim_order", "aten.clone")}
    return "" if own & set(row["graph"]) or row["op"] in EXTRA else "as " + " + ".join(row["graph"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", help="comma-separated op names (ExecuTorch's, or the extras'); default: all")
    ap.add_argument("--no-build", action="store_true", help="list coverage only (no quantize, build or run)")
    ap.add_argument("--json", help="write every row to this file")
    ap.add_argument("--out", default=str(ROOT / "build" / "op_coverage"),
                    help="build folder of the one-op models (default build/op_coverage; the shared objects in _host/)")
    a = ap.parse_args(argv)
    warnings.filterwarnings("ignore")  # export's and torchao's deprecation notes, once per model
    et = executorch_ops()
    todo = a.ops.split(",") if a.ops else list(et) + list(EXTRA)
    unknown = [op for op in todo if op not in CASES and op not in EXTRA]
    if unknown:
        ap.error(f"no model for {', '.join(unknown)} (see CASES / EXTRA)")
    missing = [op for op in et if op not in CASES]
    if missing:
        ap.error(f"ExecuTorch ops without a model in CASES: {', '.join(missing)}")
    out, cache = Path(a.out), Path(a.out) / "_host"
    t0 = time.monotonic()
    rows = []
    for op in todo:
        row = listing(op)
        row["source"] = et.get(op, "beyond ExecuTorch's lists")
        if not row["covered"]:
            row["category"] = REASONS.get(op, "not yet implemented")
        elif not a.no_build:
            for s in SCHEMES:
                row[s] = build_and_run(op, s, out, cache)
        rows.append(row)
    counted = [r for r in rows if r["op"] in et]
    covered = [r for r in counted if r["covered"]]
    listed = [r for r in counted if r["source"] == "support list"]
    print("exact: the host firmware equals tabula's Python integer reference; LSB err: max |output - float| in\n"
          "output LSB (SQNR vs float); q(f(dq)) N: max difference in codes from q(f(dq(x))), one-input ops only\n")
    print(f"{'op':44} {'class':12} {'int8 exact':>10} {'int8 LSB err':>26} {'a16w8 exact':>11} "
          f"{'a16w8 LSB err':>26}  note")
    for r in rows:
        if not r["covered"]:
            continue
        (e8, l8), (e16, l16) = _cell(r.get("int8")), _cell(r.get("a16w8"))
        note = "; ".join(n for n in (_as(r), case_of(r["op"]).note) if n)
        for s in SCHEMES:
            if "error" in r.get(s, {}):
                note += f"; {s}: {r[s]['error']}"
        print(f"{r['op']:44} {r['class'] or '-':12} {e8:>10} {l8:>26} {e16:>11} {l16:>26}  {note}")
    print(f"\ncovered: {len(covered)} / {len(counted)} = {100 * len(covered) / max(1, len(counted)):.1f} % of "
          f"ExecuTorch 1.5.1's TOSA INT ops (support list {sum(r['covered'] for r in listed)} / {len(listed)})"
          if counted else "")
    refused = [r for r in rows if not r["covered"]]
    if refused:
        print(f"\nrefused ({len(refused)}):")
        for r in refused:
            print(f"  {r['op']:44} {r['category']}  [tabula: {r['reason']}]")
    if not a.no_build:
        bad = [(r["op"], s) for r in rows if r["covered"] for s in SCHEMES
               if "error" in r[s] or not r[s]["exact"] or (r[s]["lsb_fdq"] or 0) > 1]
        listed_bad = ", ".join(f"{o} {s}" for o, s in bad) or "none"
        print(f"\nnot bit-exact, failed, or more than 1 code from q(f(dq(x))): {listed_bad}")
    print(f"({time.monotonic() - t0:.0f} s)")
    if a.json:
        Path(a.json).write_text(json.dumps({"covered": len(covered), "total": len(counted), "rows": rows}, indent=1,
                                           sort_keys=True, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
