"""TILE (any dtype, rank 1..6) -> ``tabula_tile``."""
OP = "TILE"
KERNELS = ("tabula_tile",)
TEMPLATE = """\
    {
        static const int32_t in_shape[{{ rank }}] = { {{ in_shape|join(", ") }} };
        static const int32_t multiples[{{ rank }}] = { {{ multiples|join(", ") }} };
        st = tabula_tile({{ x }}, in_shape, multiples, {{ rank }}, {{ elem_bytes }}, {{ y }});
    }
"""


def context(op, g, ref) -> dict:
    x = g.tensors[op.inputs[0]]
    return dict(x=ref(x.name), y=ref(op.outputs[0]), rank=len(x.shape), in_shape=list(x.shape),
                multiples=[int(m) for m in op.attrs["multiples"]], elem_bytes=x.itemsize)
