"""CONV2D int8 x int8 / int16 x int8 -> ``tabula_conv2d_<s8|s16>`` (int16 has no input zero point); a
4th input is the ``requant`` block of a fused RESCALE [+ CLAMP] (:func:`tabula.codegen.fusion.fuse_requant`).  A CONV2D whose input zero point codegen folded into the bias
(``attrs["folded"]``, :func:`tabula.codegen.fusion.fold_input_zp`) calls ``tabula_conv2d_s8_folded`` with
pad_value = input_zp; one with an int16 output (a precision boundary, :func:`tabula.codegen.fusion.fuse_requant`)
``tabula_conv2d_s8_s16_folded``, an int16 one with an int8 output ``tabula_conv2d_s16_s8``."""
from ._window import conv_context

OP = "CONV2D"
KERNELS = ("tabula_conv2d_s8", "tabula_conv2d_s8_folded", "tabula_conv2d_s16", "tabula_conv2d_s8_s16_folded",
           "tabula_conv2d_s16_s8")
TEMPLATE = """\
    {
        static const tabula_window win = {{ win }};
{% if a.get("folded") %}
        st = tabula_conv2d_s8{{ osfx }}_folded(&win, {{ out_c }}, {{ x }}, {{ a.input_zp }}, {{ wt }}, {{ b }}, {{ rq }}, {{ y }});
{% elif sfx == "s8" %}
        st = tabula_conv2d_s8(&win, {{ out_c }}, {{ x }}, {{ a.input_zp }}, {{ wt }}, {{ a.weight_zp }}, {{ b }}, {{ rq }}, {{ y }});
{% else %}
        st = tabula_conv2d_{{ sfx }}{{ osfx }}(&win, {{ out_c }}, {{ x }}, {{ wt }}, {{ a.weight_zp }}, {{ b }}, {{ rq }}, {{ y }});
{% endif %}
    }
"""


def context(op, g, ref) -> dict:
    return dict(conv_context(op, g, ref, slice(1, 3)), out_c=g.tensors[op.inputs[1]].shape[0])
