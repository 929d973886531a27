"""MUL int32 -> ``tabula_mul_s32``."""
OP = "MUL"
KERNELS = ("tabula_mul_s32",)
TEMPLATE = "    st = tabula_mul_s32({{ a }}, {{ b }}, {{ count }}, {{ shift }}, {{ y }});\n"


def context(op, g, ref) -> dict:
    a, b = op.inputs
    return dict(a=ref(a), b=ref(b), y=ref(op.outputs[0]), count=g.tensors[a].numel, shift=int(op.attrs.get("shift", 0)))
