from ._types import SFX

OP, TEMPLATE = "CLAMP", "clamp"


def context(op, g, ref) -> dict:
    x = g.tensors[op.inputs[0]]
    return dict(x=ref(x.name), y=ref(op.outputs[0]), count=x.numel, sfx=SFX[x.dtype], a=op.attrs)
