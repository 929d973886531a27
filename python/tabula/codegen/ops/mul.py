OP, TEMPLATE = "MUL", "elementwise"


def context(op, g, ref) -> dict:
    a, b = op.inputs
    return dict(fn="tabula_mul_s32", a=ref(a), b=ref(b), y=ref(op.outputs[0]), count=g.tensors[a].numel,
                extra=f", {int(op.attrs.get('shift', 0))}")
