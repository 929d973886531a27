"""The ``tabula_window`` initializer of a CONV2D / MAX_POOL2D / AVG_POOL2D from IR shapes and attributes, and
the ``requant`` argument of the accumulator kernels, and the call context CONV2D and DEPTHWISE_CONV2D share."""
from ... import dtypes


def window(x_shape, y_shape, kernel, stride, pad, dilation=(1, 1)) -> str:
    """C initializer ``{ n, h, w, c, out_h, out_w, kernel_h, kernel_w, stride_y, stride_x, dilation_y,
    dilation_x, pad_top, pad_left }`` (field order of ``tabula_window``)."""
    n, h, w, c = x_shape
    fields = (n, h, w, c, y_shape[1], y_shape[2], kernel[0], kernel[1], stride[0], stride[1], dilation[0],
              dilation[1], pad[0], pad[2])
    return "{ " + ", ".join(str(int(v)) for v in fields) + " }"


def requant(op, ref) -> str:
    """The C expression of an accumulator op's ``requant`` block (its 4th input, from
    :func:`tabula.codegen.fusion.fuse_requant`: the int32 words :func:`tabula.requant.pack` lays out), as the
    kernels' ``const tabula_requant *``, or ``NULL``: the kernel writes the accumulators."""
    return f"(const tabula_requant *)(const void *){ref(op.inputs[3])}" if len(op.inputs) > 3 else "NULL"


def boundary_suffix(op, g) -> str:
    """``"_<out>"`` (``_s8``, ``_s16``) when an accumulator op with a fused requantization writes the other
    activation type than its input's (a precision boundary: its kernel is ``tabula_<op>_<in>_<out>``), else
    ``""``."""
    x, y = g.tensors[op.inputs[0]], g.tensors[op.outputs[0]]
    return f"_{dtypes.get(y.dtype).sfx}" if len(op.inputs) > 3 and y.dtype != x.dtype else ""


def conv_context(op, g, ref, kernel_axes: slice) -> dict:
    """Template context of a CONV2D / DEPTHWISE_CONV2D call: ``win`` (the kernel's height and width are
    the weight's ``kernel_axes``), the C names ``x``, ``wt``, ``b``, ``y``, ``rq`` (:func:`requant`), the
    attributes ``a``, the input's dtype suffix ``sfx`` and ``osfx`` (:func:`boundary_suffix`)."""
    x, w, b = (g.tensors[n] for n in op.inputs[:3])
    y = g.tensors[op.outputs[0]]
    a = op.attrs
    return dict(
        win=window(x.shape, y.shape, w.shape[kernel_axes], a["stride"], a["pad"], a.get("dilation", (1, 1))),
        x=ref(x.name), wt=ref(w.name), b=ref(b.name), y=ref(y.name), rq=requant(op, ref), a=a, sfx=dtypes.get(x.dtype).sfx,
        osfx=boundary_suffix(op, g),
    )
