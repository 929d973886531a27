OP, TEMPLATE = "SLICE", "slice"


def context(op, g, ref) -> dict:
    x = g.tensors[op.inputs[0]]
    return dict(x=ref(x.name), y=ref(op.outputs[0]), rank=len(x.shape), in_shape=list(x.shape),
                start=op.attrs["start"], size=op.attrs["size"], elem_bytes=x.itemsize)
