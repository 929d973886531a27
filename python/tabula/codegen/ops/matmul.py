"""MATMUL int8 x int8 / int16 x int16 -> ``tabula_matmul_<s8|s16>``."""
from ... import dtypes

OP = "MATMUL"
KERNELS = ("tabula_matmul_s8", "tabula_matmul_s16")
TEMPLATE = ("    st = tabula_matmul_{{ sfx }}({{ n }}, {{ h }}, {{ c }}, {{ w }}, {{ a }}, {{ attrs.a_zp }}, {{ b }}, "
            "{{ attrs.b_zp }}, {{ y }});\n")


def context(op, g, ref) -> dict:
    a, b = (g.tensors[n] for n in op.inputs)
    return dict(n=a.shape[0], h=a.shape[1], c=a.shape[2], w=b.shape[2], a=ref(a.name), b=ref(b.name),
                y=ref(op.outputs[0]), attrs={"a_zp": 0, "b_zp": 0, **op.attrs}, sfx=dtypes.get(a.dtype).sfx)
