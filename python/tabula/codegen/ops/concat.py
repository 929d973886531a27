OP, TEMPLATE = "CONCAT", "concat"


def context(op, g, ref) -> dict:
    out = g.tensors[op.outputs[0]]
    ax = op.attrs["axis"]
    outer = 1
    for d in out.shape[:ax]:
        outer *= d
    inner = []
    for n in op.inputs:
        t = g.tensors[n]
        inner.append(t.nbytes // outer)
    return dict(inputs=[ref(n) for n in op.inputs], inner=inner, outer=outer, y=ref(op.outputs[0]))
