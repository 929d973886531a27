"""SOFTMAX: codegen's fused softmax (:func:`tabula.codegen.fusion.fuse_softmax`) -> ``tabula_softmax_<t>``."""
from ... import dtypes
from ._reduce import around_axis

OP = "SOFTMAX"
KERNELS = ("tabula_softmax_s8", "tabula_softmax_s16")
TEMPLATE = """\
    {
        static const int32_t scales[6] = { {{ scales|join(", ") }} };
        st = tabula_softmax_{{ sfx }}({{ x }}, {{ outer }}, {{ axis_len }}, {{ inner }}, {{ exp_hi }}, {{ exp_lo }}, {{ split_bits }}, {{ exp_shift }}, scales, {{ output_zp }}, {{ y }});
    }
"""


def context(op, g, ref) -> dict:
    x = g.tensors[op.inputs[0]]
    a = op.attrs
    outer, axis_len, inner = around_axis(x.shape, int(a["axis"]))
    return dict(x=ref(x.name), y=ref(op.outputs[0]), outer=outer, axis_len=axis_len, inner=inner,
                exp_hi=ref(op.inputs[1]), exp_lo=ref(op.inputs[2]) if len(op.inputs) > 2 else "NULL",
                split_bits=int(a["split_bits"]), exp_shift=int(a["exp_shift"]), scales=[int(v) for v in a["scales"]],
                output_zp=int(a["output_zp"]), sfx=dtypes.get(x.dtype).sfx)
