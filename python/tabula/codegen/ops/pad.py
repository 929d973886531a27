"""PAD (constant, any dtype) -> ``tabula_pad``."""
from ... import dtypes

OP = "PAD"
KERNELS = ("tabula_pad",)
TEMPLATE = """\
    {
        static const int32_t in_shape[{{ rank }}] = { {{ in_shape|join(", ") }} };
        static const int32_t before[{{ rank }}] = { {{ before|join(", ") }} };
        static const int32_t after[{{ rank }}] = { {{ after|join(", ") }} };
        static const {{ ctype }} pad_value = {{ value }};
        st = tabula_pad({{ x }}, in_shape, before, after, {{ rank }}, {{ elem_bytes }}, &pad_value, {{ y }});
    }
"""


def context(op, g, ref) -> dict:
    x = g.tensors[op.inputs[0]]
    a = op.attrs
    return dict(x=ref(x.name), y=ref(op.outputs[0]), rank=len(x.shape), in_shape=list(x.shape), before=a["pad_before"],
                after=a["pad_after"], value=a["pad_value"], ctype=dtypes.get(x.dtype).ctype, elem_bytes=x.itemsize)
