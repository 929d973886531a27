"""RESHAPE: no kernel -- the output aliases the input's arena bytes, or a ``memmove`` copies them."""
OP = "RESHAPE"
KERNELS = ()
TEMPLATE = """\
{% if same_buffer %}
    /* RESHAPE in place: input and output share their arena bytes. */
{% else %}
    memmove({{ y }}, {{ x }}, {{ nbytes }}u);
{% endif %}
"""


def context(op, g, ref) -> dict:
    x, y = op.inputs[0], op.outputs[0]
    return dict(x=ref(x), y=ref(y), nbytes=g.tensors[y].nbytes, same_buffer=ref(x, offset=True) == ref(y, offset=True))
