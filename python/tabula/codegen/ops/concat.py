"""CONCAT (any dtype) -> ``tabula_concat`` over ``outer`` blocks of each input's ``inner`` bytes."""
OP = "CONCAT"
KERNELS = ("tabula_concat",)
TEMPLATE = """\
    {
        const void *const inputs[{{ inputs|length }}] = { {{ inputs|join(", ") }} };
        static const int32_t inner_bytes[{{ inner|length }}] = { {{ inner|join(", ") }} };
        st = tabula_concat(inputs, inner_bytes, {{ inputs|length }}, {{ outer }}, {{ y }});
    }
"""


def context(op, g, ref) -> dict:
    out = g.tensors[op.outputs[0]]
    ax = op.attrs["axis"]
    outer = 1
    for d in out.shape[:ax]:
        outer *= d
    inner = [g.tensors[n].nbytes // outer for n in op.inputs]
    return dict(inputs=[ref(n) for n in op.inputs], inner=inner, outer=outer, y=ref(op.outputs[0]))
