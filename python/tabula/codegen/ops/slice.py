"""SLICE (any dtype) -> ``tabula_slice``."""
OP = "SLICE"
KERNELS = ("tabula_slice",)
TEMPLATE = """\
    {
        static const int32_t in_shape[{{ rank }}] = { {{ in_shape|join(", ") }} };
        static const int32_t start[{{ rank }}] = { {{ start|join(", ") }} };
        static const int32_t size[{{ rank }}] = { {{ size|join(", ") }} };
        st = tabula_slice({{ x }}, in_shape, start, size, {{ rank }}, {{ elem_bytes }}, {{ y }});
    }
"""


def context(op, g, ref) -> dict:
    x = g.tensors[op.inputs[0]]
    return dict(x=ref(x.name), y=ref(op.outputs[0]), rank=len(x.shape), in_shape=list(x.shape),
                start=op.attrs["start"], size=op.attrs["size"], elem_bytes=x.itemsize)
