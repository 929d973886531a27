"""Shared by ADD / SUB / MUL: pick the same-shape kernel or the broadcasting one, with the operand
shapes simplified at build time (the kernel's odometer then runs over as few axes as possible)."""
from __future__ import annotations


def collapse(a_shape, b_shape) -> tuple[list[int], list[int]]:
    """The shapes of two broadcasting operands (equal ranks, each axis equal or 1) with every output
    axis of size 1 dropped and neighbouring axes merged when both operands broadcast them alike
    (both read, or the same one held): ``[1,4,4,8] + [1,1,1,8] -> [16, 8] + [1, 8]``.  The row-major
    element order of both operands and the output is unchanged.  Always at least one axis."""
    a_out, b_out = [], []
    prev = None
    for x, y in zip(a_shape, b_shape):
        if (y if x == 1 else x) == 1:
            continue
        pattern = (x != 1, y != 1)
        if pattern == prev:
            a_out[-1] *= x
            b_out[-1] *= y
        else:
            a_out.append(int(x))
            b_out.append(int(y))
            prev = pattern
    return (a_out or [1]), (b_out or [1])


#: The call, same shape or broadcasting (``name``: add / sub / mul; ``extra``: ", shift" or "").
TEMPLATE = """\
{% if same %}
    st = tabula_{{ name }}_s32({{ a }}, {{ b }}, {{ count }}{{ extra }}, {{ y }});
{% else %}
    {
        static const int32_t a_shape[{{ a_shape|length }}] = { {{ a_shape|join(", ") }} };
        static const int32_t b_shape[{{ b_shape|length }}] = { {{ b_shape|join(", ") }} };
        st = tabula_{{ name }}_bcast_s32({{ a }}, a_shape, {{ b }}, b_shape, {{ a_shape|length }}{{ extra }}, {{ y }});
    }
{% endif %}
"""


def context(op, g, ref, name: str, extra: str = "") -> dict:
    """Template values of a binary elementwise op ``name`` (add / sub / mul)."""
    a, b = (g.tensors[n] for n in op.inputs)
    y = g.tensors[op.outputs[0]]
    a_shape, b_shape = collapse(a.shape, b.shape)
    return dict(name=name, a=ref(a.name), b=ref(b.name), y=ref(y.name), count=y.numel, extra=extra,
                same=tuple(a.shape) == tuple(b.shape), a_shape=a_shape, b_shape=b_shape)
