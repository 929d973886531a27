OP, TEMPLATE = "PAD", "pad"

_CTYPE = {"int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t"}


def context(op, g, ref) -> dict:
    x = g.tensors[op.inputs[0]]
    a = op.attrs
    return dict(x=ref(x.name), y=ref(op.outputs[0]), rank=len(x.shape), in_shape=list(x.shape), before=a["pad_before"],
                after=a["pad_after"], value=a["pad_value"], ctype=_CTYPE[x.dtype], elem_bytes=x.itemsize)
