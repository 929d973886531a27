"""SUB int32 -> ``tabula_sub_s32``."""
OP = "SUB"
KERNELS = ("tabula_sub_s32",)
TEMPLATE = "    st = tabula_sub_s32({{ a }}, {{ b }}, {{ count }}, {{ y }});\n"


def context(op, g, ref) -> dict:
    a, b = op.inputs
    return dict(a=ref(a), b=ref(b), y=ref(op.outputs[0]), count=g.tensors[a].numel)
