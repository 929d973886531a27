OP, TEMPLATE = "RESCALE", "rescale"

_SFX = {"int8": "s8", "int16": "s16", "int32": "s32"}


def context(op, g, ref) -> dict:
    x, y = g.tensors[op.inputs[0]], g.tensors[op.outputs[0]]
    return dict(
        x=ref(x.name), y=ref(y.name), count=y.numel, channels=y.shape[-1], a=op.attrs,
        mult=ref(f"{op.outputs[0]}__multiplier"), shift=ref(f"{op.outputs[0]}__shift"),
        per_channel=int(len(op.attrs["multiplier"]) > 1), in_sfx=_SFX[x.dtype], out_sfx=_SFX[y.dtype],
    )


def constants(op) -> dict:
    """Extra int32 arrays this op needs in flash: name -> values."""
    return {f"{op.outputs[0]}__multiplier": op.attrs["multiplier"], f"{op.outputs[0]}__shift": op.attrs["shift"]}
