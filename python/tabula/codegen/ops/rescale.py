"""RESCALE -> ``tabula_rescale_<in>_<out>``; its multipliers and shifts become int32 constants.  A RESCALE
with its CLAMP fused (:func:`tabula.codegen.fusion.fuse_rescale_clamp`: ``attrs["clamp"]``) ->
``tabula_rescale_clamp_<in>_<out>`` with the CLAMP's bounds."""
from ... import dtypes

OP = "RESCALE"
KERNELS = tuple(f"tabula_rescale_{i}_{o}" for i, o in (("s8", "s8"), ("s8", "s16"), ("s8", "s32"), ("s16", "s8"),
                                                          ("s16", "s16"), ("s16", "s32"), ("s32", "s8"), ("s32", "s16"),
                                                          ("s32", "s32"), ("s64", "s8"), ("s64", "s16"), ("s64", "s32"))
                ) + tuple(f"tabula_rescale_clamp_{i}_{o}" for i, o in (("s32", "s8"), ("s32", "s16"), ("s64", "s8"),
                                                                        ("s64", "s16")))
TEMPLATE = ("    st = tabula_rescale_{{ kind }}{{ in_sfx }}_{{ out_sfx }}({{ x }}, {{ count }}, {{ channels }}, "
            "{{ a.input_zp }}, {{ a.output_zp }}, {{ mult }}, {{ shift }}, {{ per_channel }}, {{ bounds }}{{ y }});\n")


def context(op, g, ref) -> dict:
    x, y = g.tensors[op.inputs[0]], g.tensors[op.outputs[0]]
    clamp = op.attrs.get("clamp")
    return dict(
        x=ref(x.name), y=ref(y.name), count=y.numel, channels=y.shape[-1], a=op.attrs,
        mult=ref(f"{op.outputs[0]}__multiplier"), shift=ref(f"{op.outputs[0]}__shift"),
        per_channel=int(len(op.attrs["multiplier"]) > 1), in_sfx=dtypes.get(x.dtype).sfx, out_sfx=dtypes.get(y.dtype).sfx,
        kind="clamp_" if clamp else "", bounds=f"{int(clamp[0])}, {int(clamp[1])}, " if clamp else "",
    )


def constants(op) -> dict:
    """Extra int32 arrays this op needs in flash: name -> values."""
    return {f"{op.outputs[0]}__multiplier": op.attrs["multiplier"], f"{op.outputs[0]}__shift": op.attrs["shift"]}
