"""A Link that damages what it carries: fault injection for the retry protocol (docs/protocol.md,
"Retry").

``FaultyLink(link, FaultSpec(rate=1e-2, seed=3))`` wraps any Link. Every byte, in each direction
it is enabled for, is hit with probability ``rate``; a hit is one of ``kinds``, drawn uniformly:

- ``flip``  one bit of the byte, uniformly chosen, is inverted (a UART bit error);
- ``drop``  the byte is lost (a framing or overrun error);
- ``dup``   the byte arrives twice;
- ``delay`` the byte and everything after it arrive up to ``max_delay_s`` later (a gap on the
  wire; nothing is lost or reordered).

It is deterministic: byte *n* of a direction meets the same fault for the same seed however the
bytes are chunked (two generators per direction, one for "is byte n hit", one for the fault's
kind, bit and delay, each drawn once per byte or per hit). What the retries then do depends on
timing, so a run with the same seed sends the same bytes only until its first timeout.

It also keeps the ground truth the receiver cannot know, per direction (:attr:`FaultyLink.stats`):
bytes carried, faults by kind, frames seen (a ``#`` of the clean stream starts one, ``\\n`` ends
it) and frames damaged (hit by a fault that changes what the receiver decodes: any drop, a flip
other than a hex letter's case bit, a duplicate other than of the ``#`` or ``\\n``; delays damage
nothing). Faults on bytes between frames (boot banner, EOT) are counted as ``noise_hits``.

``FaultSpec.parse("1e-2:3")`` reads the ``rate[:seed[:kinds]]`` text of ``TABULA_LINK_FAULTS``
(see :func:`tabula.deploy.run_on_board`).
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from ..errors import TabulaError
from .link import Link

KINDS = ("flip", "drop", "dup", "delay")
DIRECTIONS = ("to_device", "from_device")
_HASH, _NEWLINE = 0x23, 0x0A
_HEX_LETTERS = frozenset(b"abcdefABCDEF")


class FaultSpecError(TabulaError, ValueError):
    """A fault-injection setting that cannot be used (rate outside [0, 1), unknown kind)."""


@dataclass(frozen=True)
class FaultSpec:
    """What to inject. ``rate``: probability per byte (in [0, 1)); ``seed``: the generators' seed;
    ``kinds``: a subset of :data:`KINDS`; ``directions``: a subset of :data:`DIRECTIONS`;
    ``max_delay_s``: the longest gap a ``delay`` inserts, in seconds."""

    rate: float
    seed: int = 0
    kinds: tuple[str, ...] = KINDS
    directions: tuple[str, ...] = DIRECTIONS
    max_delay_s: float = 0.02

    def __post_init__(self):
        if not 0.0 <= self.rate < 1.0:
            raise FaultSpecError(f"fault rate {self.rate} is not a probability per byte in [0, 1)")
        if not self.kinds or any(k not in KINDS for k in self.kinds):
            raise FaultSpecError(f"fault kinds {list(self.kinds)}: choose one or more of {', '.join(KINDS)}")
        if not self.directions or any(d not in DIRECTIONS for d in self.directions):
            raise FaultSpecError(f"fault directions {list(self.directions)}: choose from {', '.join(DIRECTIONS)}")
        if not 0.0 <= self.max_delay_s <= 10.0:
            raise FaultSpecError(f"max_delay_s {self.max_delay_s} must be within [0, 10] s")

    @classmethod
    def parse(cls, text: str) -> "FaultSpec":
        """``rate[:seed[:kind,kind...]]``, e.g. ``1e-3``, ``1e-2:7``, ``0.01:7:flip,drop``."""
        parts = text.strip().split(":")
        try:
            rate = float(parts[0])
            seed = int(parts[1]) if len(parts) > 1 and parts[1] else 0
        except ValueError:
            raise FaultSpecError(f"link faults {text!r}: expected rate[:seed[:kinds]], e.g. 1e-3:7 "
                                 f"or 0.01:7:flip,drop") from None
        if len(parts) > 3:
            raise FaultSpecError(f"link faults {text!r}: expected rate[:seed[:kinds]]")
        kinds = tuple(k for k in parts[2].split(",") if k) if len(parts) > 2 else KINDS
        return cls(rate=rate, seed=seed, kinds=kinds)

    def __str__(self) -> str:
        kinds = "" if self.kinds == KINDS else ":" + ",".join(self.kinds)
        return f"{self.rate:g}:{self.seed}{kinds}"


@dataclass
class _Direction:
    hit_rng: np.random.Generator
    fault_rng: np.random.Generator
    counts: dict = field(default_factory=lambda: {
        "bytes": 0, **{k: 0 for k in KINDS}, "frames": 0, "frames_damaged": 0, "noise_hits": 0})
    in_frame: bool = False
    frame_damaged: bool = False

    def mutate(self, data: bytes, spec: FaultSpec) -> list[tuple[float, bytes]]:
        """The bytes as they arrive: ``[(gap before them in seconds, bytes), ...]``."""
        c = self.counts
        c["bytes"] += len(data)
        hits = set(np.flatnonzero(self.hit_rng.random(len(data)) < spec.rate).tolist())
        pieces: list[tuple[float, bytes]] = []
        out, gap = bytearray(), 0.0
        for i, b in enumerate(data):
            if b == _HASH:  # the clean stream's frame boundaries
                self.in_frame, self.frame_damaged = True, False
                c["frames"] += 1
            damaging = False
            if i not in hits:
                out.append(b)
            else:
                k = int(self.fault_rng.integers(len(spec.kinds)))
                bit = int(self.fault_rng.integers(8))
                delay = float(self.fault_rng.random()) * spec.max_delay_s
                kind = spec.kinds[k]
                c[kind] += 1
                if kind == "flip":
                    out.append(b ^ (1 << bit))
                    damaging = not (bit == 5 and b in _HEX_LETTERS)  # a case change decodes the same
                elif kind == "drop":
                    damaging = True
                elif kind == "dup":
                    out += bytes((b, b))
                    damaging = b not in (_HASH, _NEWLINE)  # '##' abandons an empty frame; '\n\n' is noise
                else:  # delay: this byte and the rest come after a gap
                    pieces.append((gap, bytes(out)))
                    out, gap = bytearray((b,)), delay
            if damaging:
                if not self.in_frame:
                    c["noise_hits"] += 1
                elif not self.frame_damaged:
                    self.frame_damaged = True
                    c["frames_damaged"] += 1
            if b == _NEWLINE:
                self.in_frame = False
        pieces.append((gap, bytes(out)))
        return [(g, p) for g, p in pieces if p or g]


class FaultyLink:
    """A Link (``write``, ``read``, ``close``) that injects ``spec``'s faults into ``link``.

    Writes (host→device) are damaged, then written piece by piece with the delays slept between
    them. Reads (device→host) are damaged as they come; a delayed remainder is held back and
    returned by later reads once its gap has passed (the inner link is not read while bytes are
    held, so order is kept). ``LinkClosed`` from the inner link is raised only after every held
    byte was returned.
    """

    def __init__(self, link: Link, spec: FaultSpec):
        self.link, self.spec = link, spec
        self.poll_s = getattr(link, "poll_s", 0.05)
        self._dirs = {
            d: _Direction(np.random.default_rng([spec.seed, i, 0]), np.random.default_rng([spec.seed, i, 1]))
            for i, d in enumerate(DIRECTIONS)
        }
        self._held: deque[tuple[float, bytes]] = deque()  # (release time, bytes)

    @property
    def stats(self) -> dict[str, dict[str, int]]:
        """Per direction: ``bytes``, each kind's count, ``frames``, ``frames_damaged``, ``noise_hits``."""
        return {d: dict(self._dirs[d].counts) for d in DIRECTIONS}

    def write(self, data: bytes) -> None:
        if "to_device" not in self.spec.directions:
            self.link.write(data)
            return
        for gap, piece in self._dirs["to_device"].mutate(data, self.spec):
            if gap:
                time.sleep(gap)
            if piece:
                self.link.write(piece)

    def read(self, max_bytes: int) -> bytes:
        if self._held:
            return self._release()
        data = self.link.read(max_bytes)  # raises LinkClosed when nothing is held: nothing to lose
        if not data or "from_device" not in self.spec.directions:
            return data
        now = time.monotonic()
        pieces = self._dirs["from_device"].mutate(data, self.spec)
        first = b""
        release = now
        for gap, piece in pieces:
            release += gap
            if release <= now:
                first += piece
            else:
                self._held.append((release, piece))
        return first

    def _release(self) -> bytes:
        release, _ = self._held[0]
        wait = release - time.monotonic()
        if wait > 0:
            time.sleep(min(wait, self.poll_s))
        out = b""
        now = time.monotonic()
        while self._held and self._held[0][0] <= now:
            out += self._held.popleft()[1]
        return out

    def close(self) -> None:
        self.link.close()


def summarize(stats: dict[str, dict[str, int]]) -> dict[str, int]:
    """Both directions of :attr:`FaultyLink.stats` added up (frames, frames_damaged, each kind...)."""
    total: dict[str, int] = {}
    for counts in stats.values():
        for k, v in counts.items():
            total[k] = total.get(k, 0) + v
    return total
