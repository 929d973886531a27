"""ADD_REQUANT: codegen's fused ADD / SUB of two activations with their RESCALEs
(:func:`tabula.codegen.fusion.fuse_add_requant`) -> ``tabula_add_requant_<t>``."""
from ... import dtypes

OP = "ADD_REQUANT"
KERNELS = ("tabula_add_requant_s8", "tabula_add_requant_s16")
TEMPLATE = """\
    st = tabula_add_requant_{{ sfx }}({{ a }}, {{ b }}, {{ count }}, {{ params }}, {{ y }});
"""


def context(op, g, ref) -> dict:
    a = g.tensors[op.inputs[0]]
    count = 1
    for d in a.shape:
        count *= int(d)
    return dict(a=ref(a.name), b=ref(op.inputs[1]), count=count, params=ref(op.inputs[2]), y=ref(op.outputs[0]),
                sfx=dtypes.get(a.dtype).sfx)
