"""The NPU targets tabula compiles for with Vela: accelerator name -> family, MACs per cycle, and the
Corstone FVP that models it.  Data only.

``npu=ethos-u55-128`` (SCons, ``tabula npu --npu``, :func:`tabula.npu.compile_npu`) names the accelerator as
Vela's ``--accelerator-config`` does.  The family picks the capability table
(:mod:`tabula.npu.capabilities`) and the board's ``[npu.<family>]`` defaults (system configuration, memory
mode); ``macs`` is what the FVP's ``-C ethosu.num_macs=<n>`` takes.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import StageError

__all__ = ["NpuTarget", "TARGETS", "get_target"]


@dataclass(frozen=True)
class NpuTarget:
    """One Ethos-U configuration: ``name`` (Vela's accelerator config), ``family`` (``"ethos-u55"``,
    ``"ethos-u65"``, ``"ethos-u85"``), ``macs`` (8-bit MACs per cycle), ``fvp`` (the Corstone FVP binary
    that models it)."""

    name: str
    family: str
    macs: int
    fvp: str


TARGETS: dict[str, NpuTarget] = {t.name: t for t in (
    NpuTarget("ethos-u55-32", "ethos-u55", 32, "FVP_Corstone_SSE-300_Ethos-U55"),
    NpuTarget("ethos-u55-64", "ethos-u55", 64, "FVP_Corstone_SSE-300_Ethos-U55"),
    NpuTarget("ethos-u55-128", "ethos-u55", 128, "FVP_Corstone_SSE-300_Ethos-U55"),
    NpuTarget("ethos-u55-256", "ethos-u55", 256, "FVP_Corstone_SSE-300_Ethos-U55"),
    NpuTarget("ethos-u65-256", "ethos-u65", 256, "FVP_Corstone_SSE-300_Ethos-U65"),
    NpuTarget("ethos-u65-512", "ethos-u65", 512, "FVP_Corstone_SSE-300_Ethos-U65"),
    NpuTarget("ethos-u85-256", "ethos-u85", 256, "FVP_Corstone_SSE-320"),
)}


def get_target(name: str) -> NpuTarget:
    """The target called ``name``.

    Raises:
        StageError: an unknown name (the message lists the targets)."""
    try:
        return TARGETS[name]
    except KeyError:
        raise StageError(f"unknown NPU target {name!r}; choose one of {', '.join(TARGETS)}") from None
