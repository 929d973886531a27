OP, TEMPLATE = "TRANSPOSE", "transpose"


def context(op, g, ref) -> dict:
    x = g.tensors[op.inputs[0]]
    return dict(x=ref(x.name), y=ref(op.outputs[0]), rank=len(x.shape), in_shape=list(x.shape),
                perms=op.attrs["perms"], elem_bytes=x.itemsize)
