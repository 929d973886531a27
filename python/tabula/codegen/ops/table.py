"""TABLE int8 -> ``tabula_table_s8``; int16 (one TABLE op left unfused) -> ``tabula_table_s16``."""
from ... import dtypes

OP = "TABLE"
KERNELS = ("tabula_table_s8", "tabula_table_s16")
TEMPLATE = "    st = tabula_table_{{ sfx }}({{ x }}, {{ count }}, {{ table }}, {{ y }});\n"


def context(op, g, ref) -> dict:
    x = g.tensors[op.inputs[0]]
    return dict(x=ref(x.name), table=ref(op.inputs[1]), y=ref(op.outputs[0]), count=x.numel, sfx=dtypes.get(x.dtype).sfx)
