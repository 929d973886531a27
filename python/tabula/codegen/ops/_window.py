"""The ``tabula_window`` initializer of a CONV2D / MAX_POOL2D / AVG_POOL2D from IR shapes and attributes, and
the ``requant`` argument of the accumulator kernels."""


def window(x_shape, y_shape, kernel, stride, pad, dilation=(1, 1)) -> str:
    """C initializer ``{ n, h, w, c, out_h, out_w, kernel_h, kernel_w, stride_y, stride_x, dilation_y,
    dilation_x, pad_top, pad_left }`` (field order of ``tabula_window``)."""
    n, h, w, c = x_shape
    fields = (n, h, w, c, y_shape[1], y_shape[2], kernel[0], kernel[1], stride[0], stride[1], dilation[0],
              dilation[1], pad[0], pad[2])
    return "{ " + ", ".join(str(int(v)) for v in fields) + " }"


def requant(op, ref) -> str:
    """The C expression of an accumulator op's ``requant`` block (its 4th input, from
    :func:`tabula.codegen.fuse.fuse_requant`), or ``NULL``: the kernel writes the accumulators."""
    return ref(op.inputs[3]) if len(op.inputs) > 3 else "NULL"
