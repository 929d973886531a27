from ._types import SFX
from ._window import window

OP, TEMPLATE = "AVG_POOL2D", "avg_pool2d"


def context(op, g, ref) -> dict:
    x, y = g.tensors[op.inputs[0]], g.tensors[op.outputs[0]]
    a = op.attrs
    return dict(w=window(x.shape, y.shape, a["kernel"], a["stride"], a["pad"]), x=ref(x.name), y=ref(y.name),
                sfx=SFX[x.dtype], a=a)
