from ._types import SFX
from ._window import window

OP, TEMPLATE = "CONV2D", "conv2d"


def context(op, g, ref) -> dict:
    x, w, b = (g.tensors[n] for n in op.inputs)
    y = g.tensors[op.outputs[0]]
    a = op.attrs
    return dict(
        w=window(x.shape, y.shape, w.shape[1:3], a["stride"], a["pad"], a["dilation"]), out_c=w.shape[0],
        x=ref(x.name), wt=ref(w.name), b=ref(b.name), y=ref(y.name), a=a, sfx=SFX[x.dtype],
    )
