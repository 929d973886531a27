"""MAX_POOL2D int8 / int16 -> ``tabula_max_pool2d_<s8|s16>``."""
from ... import dtypes
from ._window import window

OP = "MAX_POOL2D"
KERNELS = ("tabula_max_pool2d_s8", "tabula_max_pool2d_s16")
TEMPLATE = """\
    {
        static const tabula_window win = {{ win }};
        st = tabula_max_pool2d_{{ sfx }}(&win, {{ x }}, {{ y }});
    }
"""


def context(op, g, ref) -> dict:
    x, y = g.tensors[op.inputs[0]], g.tensors[op.outputs[0]]
    a = op.attrs
    return dict(win=window(x.shape, y.shape, a["kernel"], a["stride"], a["pad"]), x=ref(x.name), y=ref(y.name),
                sfx=dtypes.get(x.dtype).sfx)
