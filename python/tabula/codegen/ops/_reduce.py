"""What the reduction and softmax emitters share: the ``[outer][axis_len][inner]`` view of a tensor
around one axis."""
from __future__ import annotations

import math


def around_axis(shape, axis: int) -> tuple[int, int, int]:
    """``(outer, axis_len, inner)``: the products of the dims before, at and after ``axis``."""
    shape = [int(d) for d in shape]
    return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])
