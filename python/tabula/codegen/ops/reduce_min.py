"""REDUCE_MIN (int8 / int16 / int32) -> ``tabula_reduce_min_<t>``."""
from ... import dtypes
from ._reduce import around_axis

OP = "REDUCE_MIN"
KERNELS = ("tabula_reduce_min_s8", "tabula_reduce_min_s16", "tabula_reduce_min_s32")
TEMPLATE = "    st = tabula_reduce_min_{{ sfx }}({{ x }}, {{ outer }}, {{ axis_len }}, {{ inner }}, {{ y }});\n"


def context(op, g, ref) -> dict:
    x = g.tensors[op.inputs[0]]
    outer, axis_len, inner = around_axis(x.shape, int(op.attrs["axis"]))
    return dict(x=ref(x.name), y=ref(op.outputs[0]), outer=outer, axis_len=axis_len, inner=inner,
                sfx=dtypes.get(x.dtype).sfx)
