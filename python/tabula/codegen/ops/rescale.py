from ._types import SFX

OP, TEMPLATE = "RESCALE", "rescale"


def context(op, g, ref) -> dict:
    x, y = g.tensors[op.inputs[0]], g.tensors[op.outputs[0]]
    return dict(
        x=ref(x.name), y=ref(y.name), count=y.numel, channels=y.shape[-1], a=op.attrs,
        mult=ref(f"{op.outputs[0]}__multiplier"), shift=ref(f"{op.outputs[0]}__shift"),
        per_channel=int(len(op.attrs["multiplier"]) > 1), in_sfx=SFX[x.dtype], out_sfx=SFX[y.dtype],
    )


def constants(op) -> dict:
    """Extra int32 arrays this op needs in flash: name -> values."""
    return {f"{op.outputs[0]}__multiplier": op.attrs["multiplier"], f"{op.outputs[0]}__shift": op.attrs["shift"]}
