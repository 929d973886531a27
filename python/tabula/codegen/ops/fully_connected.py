from ._types import SFX

OP, TEMPLATE = "FULLY_CONNECTED", "fully_connected"


def context(op, g, ref) -> dict:
    x, w, b = (g.tensors[n] for n in op.inputs)
    return dict(n=x.shape[0], in_c=w.shape[1], out_c=w.shape[0], x=ref(x.name), wt=ref(w.name), b=ref(b.name),
                y=ref(op.outputs[0]), a=op.attrs, sfx=SFX[x.dtype])
