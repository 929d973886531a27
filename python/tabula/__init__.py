"""tabula: PyTorch model -> quantized integer program (TOSA semantics) -> bare-metal Arm firmware.

Public API::

    gm = tabula.quantize(model, example_inputs, calibration, scheme="int8")  # PT2E converted graph
    gm = tabula.quantize(model, example_inputs, calibration, scheme="mixed", target_sqnr=30)  # int8/int16 per layer
    program = tabula.lower(gm, example_inputs)                                # tabula.Program
    program.run(*float_inputs)     # quantize, run the integer reference, dequantize
    program.run_int(*int_inputs)   # integer reference, device layout (NHWC)
    program.save(dir); tabula.load(dir)

The stages are subpackages (``tabula.quantizer``, ``tabula.lowering``, ``tabula.reference``,
``tabula.codegen``, ``tabula.deploy``, ``tabula.report``) over shared leaves (``tabula.ir``,
``tabula.rules``, ``tabula.qmath``, ``tabula.dtypes``, ``tabula.errors``, ``tabula.fx``).
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

from .errors import TabulaError  # noqa: E402
from .program import Program, QParams  # noqa: E402

__all__ = ["quantize", "lower", "load", "Program", "QParams", "TabulaError"]
__version__ = "0.1.0"


def quantize(model, example_inputs, calibration, scheme: str = "int8", table_output: str | None = None,
             observer: str = "auto", **mixed):
    """Quantize ``model`` with torchao PT2E under tabula's rules; see :func:`tabula.quantizer.quantize`
    (``scheme="mixed"`` takes ``target_sqnr=``, ``budget=``, ``precision=``, ``board=``, ``report=``;
    ``precision=`` overrides layers of any scheme)."""
    from .quantizer import quantize as _quantize

    return _quantize(model, tuple(example_inputs), calibration, scheme=scheme, table_output=table_output,
                     observer=observer, **mixed)


def lower(quantized, example_inputs=None) -> Program:
    """Lower a converted PT2E graph (from :func:`quantize`) to a :class:`Program`.

    ``example_inputs`` is accepted for symmetry with :func:`quantize`; shapes come from the graph.
    Raises :class:`tabula.errors.UnsupportedOpError` or :class:`tabula.errors.LoweringError`."""
    from .lowering.pipeline import lower_graph

    return Program(lower_graph(quantized))


def load(directory) -> Program:
    """Load a :class:`Program` saved with :meth:`Program.save`; :class:`tabula.errors.IRError` if the
    directory holds no readable, valid IR."""
    return Program.load(directory)
