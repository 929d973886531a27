"""TRANSPOSE_CONV2D int8 x int8 / int16 x int8 -> ``tabula_transpose_conv2d_<s8|s16>`` (accumulator out; the
RESCALE after it is its own call)."""
from ... import dtypes

OP = "TRANSPOSE_CONV2D"
KERNELS = ("tabula_transpose_conv2d_s8", "tabula_transpose_conv2d_s16")
TEMPLATE = ("    st = tabula_transpose_conv2d_{{ sfx }}({{ n }}, {{ ih }}, {{ iw }}, {{ ic }}, {{ oh }}, {{ ow }}, {{ oc }}, "
            "{{ kh }}, {{ kw }}, {{ sy }}, {{ sx }}, {{ pt }}, {{ pl }}, {{ x }}, {{ izp }}, {{ wt }}, {{ wzp }}, {{ b }}, "
            "{{ y }});\n")


def context(op, g, ref) -> dict:
    x, w = g.tensors[op.inputs[0]], g.tensors[op.inputs[1]]
    out = g.tensors[op.outputs[0]]
    n, ih, iw, ic = x.shape
    oc, kh, kw, _ = w.shape
    pt, _, pl, _ = (int(v) for v in op.attrs["out_pad"])
    sy, sx = (int(v) for v in op.attrs["stride"])
    return dict(sfx=dtypes.get(x.dtype).sfx, n=n, ih=ih, iw=iw, ic=ic, oh=out.shape[1], ow=out.shape[2], oc=oc, kh=kh,
                kw=kw, sy=sy, sx=sx, pt=pt, pl=pl, x=ref(x.name), izp=int(op.attrs.get("input_zp", 0)), wt=ref(w.name),
                wzp=int(op.attrs.get("weight_zp", 0)), b=ref(op.inputs[2]), y=ref(out.name))
