"""The ``tabula_window`` fields of a CONV2D / MAX_POOL2D from IR shapes and attributes."""


def window(x_shape, y_shape, kernel, stride, pad, dilation=(1, 1)) -> dict:
    n, h, w, c = x_shape
    return dict(
        n=n, h=h, w=w, c=c, out_h=y_shape[1], out_w=y_shape[2], kernel_h=kernel[0], kernel_w=kernel[1],
        stride_y=stride[0], stride_x=stride[1], dilation_y=dilation[0], dilation_x=dilation[1],
        pad_top=pad[0], pad_left=pad[2],
    )
