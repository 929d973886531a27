"""DEPTHWISE_CONV2D int8 x int8 / int16 x int8 -> ``tabula_depthwise_conv2d_<s8|s16>`` (weights
``[KH, KW, C, M]`` as the IR holds them; int16 has no input zero point); a 4th input is the ``requant`` block
of a fused RESCALE [+ CLAMP] (:func:`tabula.codegen.fusion.fuse_requant`), and an output of the other
activation type (a precision boundary) calls ``tabula_depthwise_conv2d_<s16_s8|s8_s16>``."""
from ._window import conv_context

OP = "DEPTHWISE_CONV2D"
KERNELS = ("tabula_depthwise_conv2d_s8", "tabula_depthwise_conv2d_s16", "tabula_depthwise_conv2d_s16_s8",
           "tabula_depthwise_conv2d_s8_s16")
TEMPLATE = """\
    {
        static const tabula_window win = {{ win }};
{% if sfx == "s8" %}
        st = tabula_depthwise_conv2d_s8{{ osfx }}(&win, {{ mult }}, {{ x }}, {{ a.input_zp }}, {{ wt }}, {{ a.weight_zp }}, {{ b }}, {{ rq }}, {{ y }});
{% else %}
        st = tabula_depthwise_conv2d_{{ sfx }}{{ osfx }}(&win, {{ mult }}, {{ x }}, {{ wt }}, {{ a.weight_zp }}, {{ b }}, {{ rq }}, {{ y }});
{% endif %}
    }
"""


def context(op, g, ref) -> dict:
    return dict(conv_context(op, g, ref, slice(0, 2)), mult=g.tensors[op.inputs[1]].shape[3])
