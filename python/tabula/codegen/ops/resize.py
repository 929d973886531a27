"""RESIZE nearest, integer factors (any dtype) -> ``tabula_resize_nearest``."""
OP = "RESIZE"
KERNELS = ("tabula_resize_nearest",)
TEMPLATE = ("    st = tabula_resize_nearest({{ x }}, {{ n }}, {{ h }}, {{ w }}, {{ c }}, {{ sy }}, {{ sx }}, "
            "{{ elem_bytes }}, {{ y }});\n")


def context(op, g, ref) -> dict:
    x = g.tensors[op.inputs[0]]
    n, h, w, c = x.shape
    sy, sx = op.attrs["scale"]
    return dict(x=ref(x.name), y=ref(op.outputs[0]), n=n, h=h, w=w, c=c, sy=sy, sx=sx, elem_bytes=x.itemsize)
