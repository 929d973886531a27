"""REVERSE (any dtype) -> ``tabula_reverse`` on the ``[outer][axis_len][inner bytes]`` view."""
from ._reduce import around_axis

OP = "REVERSE"
KERNELS = ("tabula_reverse",)
TEMPLATE = "    st = tabula_reverse({{ x }}, {{ outer }}, {{ axis_len }}, {{ inner_bytes }}, {{ y }});\n"


def context(op, g, ref) -> dict:
    x = g.tensors[op.inputs[0]]
    outer, axis_len, inner = around_axis(x.shape, int(op.attrs["axis"]))
    return dict(x=ref(x.name), y=ref(op.outputs[0]), outer=outer, axis_len=axis_len, inner_bytes=inner * x.itemsize)
