"""All quantization arithmetic of tabula, by subject (every function names its rounding rule):

- :mod:`.scaling`: TOSA 1.0 integer scaling (multiplier/shift, ``apply_scale_32/16``,
  ``reciprocal_scale``) and PyTorch's quantize/dequantize;
- :mod:`.table8`: the int8 TABLE (every input code enumerated);
- :mod:`.table16`: the int16 TABLE (interpolation, fitted entries) and its multi-table plans;
  :mod:`.table16_tiled`: tiled plans (a backbone plus zoomed corrections at singular points);
  :mod:`.table16_plan`: which of those forms an op gets;
- :mod:`.bounds`: table-exact output qparams and the error bound of a TABLE over every code;
- :mod:`.softmax`: the integer softmax (exp tables, the division's scales, proofs and error bound).

The names below are re-exported so callers write ``from tabula.qmath import quantize_multiplier``.
"""
from ..errors import QuantizationError
from .bounds import table_error_lsb, table_output_qparams
from .scaling import (
    apply_scale_16_round_half_up,
    apply_scale_32_round_half_up,
    dequantize,
    quantize_multiplier,
    quantize_int32_round_half_even,
    quantize_multiplier_16,
    quantize_round_half_even,
    reciprocal_scale,
)
from .softmax import SoftmaxPlan, build_softmax_plan, softmax_apply
from .table8 import build_table_int8
from .table16_plan import build_table_int16_plan
from .table16_tiled import build_table_int16_tiled
from .table16 import (
    INT16_TABLE_CODES,
    TABLE16_FRAC_BITS,
    TABLE16_RESCALE,
    TABLE16_SPLIT_RESCALE,
    TABLE16_SPLIT_SHIFT_UP,
    Ramp16,
    Table16Plan,
    Table16Product,
    Table16Term,
    build_table_int16,
    build_table_int16_split,
    build_table_int16_zoom,
    centre_rescale,
    centre_table,
    split_table_int16,
    table16_apply,
    table_apply_int16,
    table_interpolate_int16,
    zoom_rescale,
)

__all__ = [
    "QuantizationError", "quantize_multiplier", "quantize_multiplier_16", "apply_scale_32_round_half_up",
    "apply_scale_16_round_half_up", "reciprocal_scale", "quantize_round_half_even", "quantize_int32_round_half_even",
    "dequantize",
    "build_table_int8", "build_table_int16", "build_table_int16_split", "build_table_int16_zoom",
    "build_table_int16_plan", "build_table_int16_tiled", "Table16Plan", "Table16Term", "Ramp16", "Table16Product",
    "centre_table", "centre_rescale", "table16_apply", "table_apply_int16",
    "table_interpolate_int16", "split_table_int16", "zoom_rescale", "INT16_TABLE_CODES", "TABLE16_FRAC_BITS",
    "TABLE16_RESCALE", "TABLE16_SPLIT_RESCALE", "TABLE16_SPLIT_SHIFT_UP", "table_output_qparams",
    "table_error_lsb", "SoftmaxPlan", "build_softmax_plan", "softmax_apply",
]
