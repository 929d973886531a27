"""The mixed scheme's decision as data (torch-free: ``tabula show`` prints it from ``results.json``):
:class:`Choice` and one :class:`LayerChoice` per layer (:mod:`tabula.quantizer.mixed` makes them)."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields

__all__ = ["LayerChoice", "Choice"]


@dataclass
class LayerChoice:
    """One layer's decision.  ``scheme``: ``"int8"`` or ``"a16w8"``; ``forced``: set by the user;
    ``cost_int8`` / ``cost_a16w8``: estimated instructions of the ops on this layer's dtype and of its
    consumers with everything else as chosen, this layer int8 / int16; ``gain_db``: what the output SQNR
    (simulated, calibration data) loses when this layer is put back to int8 (chosen layers) or would gain
    from it alone (others, estimated); ``sqnr_int8_db`` / ``sqnr_int16_db`` / ``sqnr_weights_db``: the
    output SQNR with only this layer's activations in int8 / int16, or only its weights int8
    (everything else float)."""

    name: str
    label: str
    op: str
    scheme: str
    forced: bool
    cost_int8: float
    cost_a16w8: float
    gain_db: float | None
    sqnr_int8_db: float
    sqnr_int16_db: float
    sqnr_weights_db: float | None


@dataclass
class Choice:
    """The mixed scheme's decision and its figures (simulated on ``samples`` calibration inputs: the
    SQNRs of int8, a16w8 and the mix from their activations' noise, simulated with float weights, plus
    the int8 weights' noise ``sqnr_weights``; instructions from the cost model of ``board``)."""

    board: str
    samples: int
    target_sqnr: float | None
    budget: float | None
    sqnr_int8: float
    sqnr_a16w8: float
    sqnr_weights: float
    sqnr_mixed: float
    instructions_int8: float
    instructions_a16w8: float
    instructions_mixed: float
    layers: list[LayerChoice] = field(default_factory=list)
    met: bool = True

    @property
    def precision(self) -> dict[str, str]:
        """Layer name -> scheme: what :class:`~tabula.quantizer.precision.PrecisionMap` takes."""
        return {lay.name: lay.scheme for lay in self.layers}

    def to_json(self) -> dict:
        """A JSON-safe dict (an infinite SQNR -- a layer with no grid, or no noise -- becomes None)."""
        def clean(v):
            if isinstance(v, float) and not math.isfinite(v):
                return None
            if isinstance(v, dict):
                return {k: clean(x) for k, x in v.items()}
            if isinstance(v, list):
                return [clean(x) for x in v]
            return v

        return clean(asdict(self))

    @classmethod
    def from_json(cls, d: dict) -> "Choice":
        """The :class:`Choice` of :meth:`to_json`'s dict (``precision.json``); missing fields read as
        None (so a report of an older or edited file still prints)."""
        def pick(kind, src):
            return kind(**{f.name: src.get(f.name) for f in fields(kind)})

        c = pick(cls, {k: v for k, v in d.items() if k != "layers"})
        c.layers = [pick(LayerChoice, lay) for lay in d.get("layers") or []]
        c.met = bool(d.get("met", True))
        return c

    def _not_met(self) -> str:
        if self.target_sqnr is not None and self.sqnr_mixed < self.target_sqnr:
            return "; the target is NOT met" + (" within the budget" if self.budget else "")
        return (f"; the budget is below the cheapest mix's estimate ({self.instructions_mixed:,.0f}: int8 and the "
                "overrides): nothing fits it")

    def table(self) -> str:
        """The per-layer report: scheme, estimated cost, gain and sensitivities, then the totals."""
        def db(v):
            return "    -" if v is None else ("  inf" if v == math.inf else f"{v:5.1f}")

        def num(v, spec=",.0f"):
            return "-" if v is None else format(v, spec)

        goal = ", ".join(([f"target {self.target_sqnr:.1f} dB"] if self.target_sqnr is not None else [])
                         + ([f"budget {self.budget:,.0f} instructions"] if self.budget else []))
        lines = [f"mixed precision ({goal}; {self.samples} calibration samples, cost model {self.board}):",
                 f"  {'layer':34s} {'op':14s} {'scheme':7s} {'instr int8':>11s} {'int16':>11s} {'gain dB':>7s}"
                 f"  alone: {'int8':>5s} {'int16':>5s} {'weights':>7s}"]
        for lay in self.layers:
            tag = lay.scheme + ("*" if lay.forced else "")
            lines.append(f"  {str(lay.label)[:34]:34s} {str(lay.op).replace('aten.', '')[:14]:14s} {tag:7s} "
                         f"{num(lay.cost_int8):>11s} {num(lay.cost_a16w8):>11s} {db(lay.gain_db):>7s}        "
                         f"{db(lay.sqnr_int8_db)} {db(lay.sqnr_int16_db)} {db(lay.sqnr_weights_db):>7s}")
        n16 = sum(lay.scheme == "a16w8" for lay in self.layers)
        ratio = (f" ({self.instructions_mixed / self.instructions_int8:.2f}x int8)"
                 if self.instructions_mixed and self.instructions_int8 else "")
        lines.append(f"  int16 layers {n16} of {len(self.layers)}; output SQNR (simulated, activations + weights; a softmax's at its logits) int8 {db(self.sqnr_int8).strip()}, "
                     f"a16w8 {db(self.sqnr_a16w8).strip()}, mixed {db(self.sqnr_mixed).strip()} dB (weights alone "
                     f"{db(self.sqnr_weights).strip()}); instructions (estimated) int8 {num(self.instructions_int8)}, "
                     f"a16w8 {num(self.instructions_a16w8)}, mixed {num(self.instructions_mixed)}{ratio}"
                     + ("" if self.met else self._not_met()))
        lines.append("  (* = set by precision=; gain: SQNR lost by putting a chosen layer back to int8, or gained by "
                     "a layer left int8 alone; alone: this layer's activations / weights quantized, the rest float; instr: the "
                     "estimated instructions of the ops whose kernels run in this layer's dtype -- those that read its output "
                     "-- and of its boundary RESCALE)")
        return "\n".join(lines)
