"""INTDIV int32 -> ``tabula_intdiv_s32``."""
OP = "INTDIV"
KERNELS = ("tabula_intdiv_s32",)
TEMPLATE = "    st = tabula_intdiv_s32({{ a }}, {{ b }}, {{ count }}, {{ y }});\n"


def context(op, g, ref) -> dict:
    a, b = op.inputs
    return dict(a=ref(a), b=ref(b), y=ref(op.outputs[0]), count=g.tensors[a].numel)
