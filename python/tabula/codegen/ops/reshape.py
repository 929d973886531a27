OP, TEMPLATE = "RESHAPE", "reshape"


def context(op, g, ref) -> dict:
    x, y = op.inputs[0], op.outputs[0]
    return dict(x=ref(x), y=ref(y), nbytes=g.tensors[y].nbytes, same_buffer=ref(x, offset=True) == ref(y, offset=True))
