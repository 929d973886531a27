"""TRANSPOSE (any dtype, rank <= 6) -> ``tabula_transpose``."""
OP = "TRANSPOSE"
KERNELS = ("tabula_transpose",)
TEMPLATE = """\
    {
        static const int32_t in_shape[{{ rank }}] = { {{ in_shape|join(", ") }} };
        static const int32_t perms[{{ rank }}] = { {{ perms|join(", ") }} };
        st = tabula_transpose({{ x }}, in_shape, perms, {{ rank }}, {{ elem_bytes }}, {{ y }});
    }
"""


def context(op, g, ref) -> dict:
    x = g.tensors[op.inputs[0]]
    return dict(x=ref(x.name), y=ref(op.outputs[0]), rank=len(x.shape), in_shape=list(x.shape),
                perms=op.attrs["perms"], elem_bytes=x.itemsize)
