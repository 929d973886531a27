"""SELECT -> ``tabula_select`` (broadcasting; the element size from the operands' dtype)."""
OP = "SELECT"
KERNELS = ("tabula_select",)
TEMPLATE = """\
    {
        static const int32_t c_shape[{{ rank }}] = { {{ c_shape|join(", ") }} };
        static const int32_t a_shape[{{ rank }}] = { {{ a_shape|join(", ") }} };
        static const int32_t b_shape[{{ rank }}] = { {{ b_shape|join(", ") }} };
        st = tabula_select({{ c }}, c_shape, {{ a }}, a_shape, {{ b }}, b_shape, {{ rank }}, {{ elem_bytes }}, {{ y }});
    }
"""


def context(op, g, ref) -> dict:
    c, a, b = (g.tensors[n] for n in op.inputs)
    return dict(c=ref(c.name), a=ref(a.name), b=ref(b.name), y=ref(op.outputs[0]), rank=len(a.shape),
                c_shape=list(c.shape), a_shape=list(a.shape), b_shape=list(b.shape), elem_bytes=a.itemsize)
