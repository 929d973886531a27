"""DEPTHWISE_CONV2D int8 x int8 / int16 x int8 -> ``tabula_depthwise_conv2d_<s8|s16>`` (weights
``[KH, KW, C, M]`` as the IR holds them; int16 has no input zero point)."""
from ... import dtypes
from ._window import window

OP = "DEPTHWISE_CONV2D"
KERNELS = ("tabula_depthwise_conv2d_s8", "tabula_depthwise_conv2d_s16")
TEMPLATE = """\
    {
        static const tabula_window win = {{ win }};
{% if sfx == "s8" %}
        st = tabula_depthwise_conv2d_s8(&win, {{ mult }}, {{ x }}, {{ a.input_zp }}, {{ wt }}, {{ a.weight_zp }}, {{ b }}, {{ y }});
{% else %}
        st = tabula_depthwise_conv2d_{{ sfx }}(&win, {{ mult }}, {{ x }}, {{ wt }}, {{ a.weight_zp }}, {{ b }}, {{ y }});
{% endif %}
    }
"""


def context(op, g, ref) -> dict:
    x, w, b = (g.tensors[n] for n in op.inputs)
    y = g.tensors[op.outputs[0]]
    a = op.attrs
    return dict(
        win=window(x.shape, y.shape, w.shape[0:2], a["stride"], a["pad"], a.get("dilation", (1, 1))), mult=w.shape[3],
        x=ref(x.name), wt=ref(w.name), b=ref(b.name), y=ref(y.name), a=a, sfx=dtypes.get(x.dtype).sfx,
    )
