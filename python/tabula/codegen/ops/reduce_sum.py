"""REDUCE_SUM int32 -> ``tabula_reduce_sum_s32``."""
from ._reduce import around_axis

OP = "REDUCE_SUM"
KERNELS = ("tabula_reduce_sum_s32",)
TEMPLATE = "    st = tabula_reduce_sum_s32({{ x }}, {{ outer }}, {{ axis_len }}, {{ inner }}, {{ y }});\n"


def context(op, g, ref) -> dict:
    x = g.tensors[op.inputs[0]]
    outer, axis_len, inner = around_axis(x.shape, int(op.attrs["axis"]))
    return dict(x=ref(x.name), y=ref(op.outputs[0]), outer=outer, axis_len=axis_len, inner=inner)
