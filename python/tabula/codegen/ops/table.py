from ._types import SFX

OP, TEMPLATE = "TABLE", "table"


def context(op, g, ref) -> dict:
    x = g.tensors[op.inputs[0]]
    return dict(x=ref(x.name), table=ref(op.inputs[1]), y=ref(op.outputs[0]), count=x.numel, sfx=SFX[x.dtype])
