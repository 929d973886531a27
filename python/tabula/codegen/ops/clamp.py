"""CLAMP int8 / int16 -> ``tabula_clamp_<s8|s16>``."""
from ... import dtypes

OP = "CLAMP"
KERNELS = ("tabula_clamp_s8", "tabula_clamp_s16")
TEMPLATE = "    st = tabula_clamp_{{ sfx }}({{ x }}, {{ count }}, {{ a.min }}, {{ a.max }}, {{ y }});\n"


def context(op, g, ref) -> dict:
    x = g.tensors[op.inputs[0]]
    return dict(x=ref(x.name), y=ref(op.outputs[0]), count=x.numel, sfx=dtypes.get(x.dtype).sfx, a=op.attrs)
