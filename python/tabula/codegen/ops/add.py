OP, TEMPLATE = "ADD", "elementwise"


def context(op, g, ref) -> dict:
    a, b = op.inputs
    return dict(fn="tabula_add_s32", a=ref(a), b=ref(b), y=ref(op.outputs[0]), count=g.tensors[a].numel, extra="")
