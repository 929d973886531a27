"""FULLY_CONNECTED int8 x int8 / int16 x int8 -> ``tabula_fully_connected_<s8|s16>``; a 4th input is the
``requant`` block of a fused RESCALE [+ CLAMP] (:func:`tabula.codegen.fusion.fuse_requant`); with ``attrs["folded"]`` (:func:`tabula.codegen.fusion.fold_input_zp`)
the bias already holds ``-input_zp * sum(w)`` and the call passes input_zp 0."""
from ... import dtypes
from ._window import requant

OP = "FULLY_CONNECTED"
KERNELS = ("tabula_fully_connected_s8", "tabula_fully_connected_s16")
TEMPLATE = """\
{% if sfx == "s8" %}
    st = tabula_fully_connected_s8({{ n }}, {{ in_c }}, {{ out_c }}, {{ x }}, {{ 0 if a.get("folded") else a.input_zp }}, {{ wt }}, {{ a.weight_zp }}, {{ b }}, {{ rq }}, {{ y }});
{% else %}
    st = tabula_fully_connected_{{ sfx }}({{ n }}, {{ in_c }}, {{ out_c }}, {{ x }}, {{ wt }}, {{ a.weight_zp }}, {{ b }}, {{ rq }}, {{ y }});
{% endif %}
"""


def context(op, g, ref) -> dict:
    x, w, b = (g.tensors[n] for n in op.inputs[:3])
    return dict(n=x.shape[0], in_c=w.shape[1], out_c=w.shape[0], x=ref(x.name), wt=ref(w.name), b=ref(b.name),
                rq=requant(op, ref), y=ref(op.outputs[0]), a=op.attrs, sfx=dtypes.get(x.dtype).sfx)
