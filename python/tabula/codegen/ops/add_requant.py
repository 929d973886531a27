"""ADD_REQUANT: codegen's fused ADD / SUB of two activations with their RESCALEs
(:func:`tabula.codegen.fusion.fuse_add_requant`) -> ``tabula_add_requant_<t>`` when a, b and the output
have one type, else ``tabula_add_requant_<ta>_<tb>_<to>`` (scheme=mixed)."""
from itertools import product

from ... import dtypes

OP = "ADD_REQUANT"
_SFX = ("s8", "s16")
KERNELS = tuple(f"tabula_add_requant_{k[0] if len(set(k)) == 1 else '_'.join(k)}" for k in product(_SFX, repeat=3))
TEMPLATE = """\
    st = tabula_add_requant_{{ sfx }}({{ a }}, {{ b }}, {{ count }}, {{ params }}, {{ y }});
"""


def kernel_suffix(ta: str, tb: str, to: str) -> str:
    """The kernel's suffix for a, b and the output of IR dtypes ``ta``, ``tb``, ``to``: ``s8`` / ``s16``
    when they are one type, else ``<ta>_<tb>_<to>`` (e.g. ``s8_s16_s16``)."""
    sfx = [dtypes.get(t).sfx for t in (ta, tb, to)]
    return sfx[0] if len(set(sfx)) == 1 else "_".join(sfx)


def context(op, g, ref) -> dict:
    a, b, y = g.tensors[op.inputs[0]], g.tensors[op.inputs[1]], g.tensors[op.outputs[0]]
    count = 1
    for d in a.shape:
        count *= int(d)
    return dict(a=ref(a.name), b=ref(b.name), count=count, params=ref(op.inputs[2]), y=ref(y.name),
                sfx=kernel_suffix(a.dtype, b.dtype, y.dtype))
