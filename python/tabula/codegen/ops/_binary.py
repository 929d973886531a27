"""Shared by the typed broadcasting binary ops (MAXIMUM, MINIMUM, GREATER, GREATER_EQUAL, EQUAL, BITWISE_*,
LOGICAL_LEFT_SHIFT): one kernel call ``tabula_<name>_<sfx>(a, a_shape, b, b_shape, rank, y)`` with the
operand shapes merged at build time (:func:`._broadcast.collapse`: equal shapes become one axis)."""
from __future__ import annotations

from ... import dtypes
from ._broadcast import collapse

TEMPLATE = """\
    {
        static const int32_t a_shape[{{ a_shape|length }}] = { {{ a_shape|join(", ") }} };
        static const int32_t b_shape[{{ b_shape|length }}] = { {{ b_shape|join(", ") }} };
        st = tabula_{{ name }}_{{ sfx }}({{ a }}, a_shape, {{ b }}, b_shape, {{ a_shape|length }}, {{ y }});
    }
"""


def kernels(name: str, types=("int32",)) -> tuple[str, ...]:
    """The kernel names of op ``name`` over its operand dtypes."""
    return tuple(f"tabula_{name}_{dtypes.get(t).sfx}" for t in types)


def context(op, g, ref, name: str) -> dict:
    """Template values of binary op ``name`` (``maximum``, ``bitwise_and``, ...)."""
    a, b = (g.tensors[n] for n in op.inputs)
    a_shape, b_shape = collapse(a.shape, b.shape)
    return dict(name=name, sfx=dtypes.get(a.dtype).sfx, a=ref(a.name), b=ref(b.name), y=ref(op.outputs[0]),
                a_shape=a_shape, b_shape=b_shape)
