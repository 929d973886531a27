"""RESIZE: NEAREST with integer factors (any dtype) -> ``tabula_resize_nearest``; BILINEAR int8 / int16 ->
``tabula_resize_bilinear_<s8|s16>`` (int32 / int48 out; the RESCALE after it is its own call)."""
from ... import dtypes

OP = "RESIZE"
KERNELS = ("tabula_resize_nearest", "tabula_resize_bilinear_s8", "tabula_resize_bilinear_s16")
TEMPLATE = """\
{% if mode == "BILINEAR" %}
    st = tabula_resize_bilinear_{{ sfx }}({{ x }}, {{ n }}, {{ h }}, {{ w }}, {{ c }}, {{ oh }}, {{ ow }}, {{ s[0] }}, {{ s[1] }}, {{ s[2] }}, {{ s[3] }}, {{ off[0] }}, {{ off[1] }}, {{ y }});
{% else %}
    st = tabula_resize_nearest({{ x }}, {{ n }}, {{ h }}, {{ w }}, {{ c }}, {{ sy }}, {{ sx }}, {{ elem_bytes }}, {{ y }});
{% endif %}
"""


def context(op, g, ref) -> dict:
    x = g.tensors[op.inputs[0]]
    out = g.tensors[op.outputs[0]]
    n, h, w, c = x.shape
    mode = op.attrs.get("mode", "NEAREST")
    if mode == "BILINEAR":
        return dict(mode=mode, sfx=dtypes.get(x.dtype).sfx, x=ref(x.name), y=ref(out.name), n=n, h=h, w=w, c=c,
                    oh=out.shape[1], ow=out.shape[2], s=[int(v) for v in op.attrs["scale"]],
                    off=[int(v) for v in op.attrs["offset"]])
    sy, sx = op.attrs["scale"]
    return dict(mode=mode, x=ref(x.name), y=ref(out.name), n=n, h=h, w=w, c=c, sy=sy, sx=sx, elem_bytes=x.itemsize)
