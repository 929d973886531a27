"""One module per IR op (and codegen's fused ops): everything the C runner needs to call its kernel.

Each module defines ``OP`` (the TOSA name), ``KERNELS`` (the C kernels its calls use; ``()`` when the
op needs none, e.g. a RESHAPE that aliases its buffer), ``TEMPLATE`` (the Jinja2 text of the call in
``tabula_model_run``) and ``context(op, g, ref)`` giving the template its values; ``ref(name)`` is the
C expression of a tensor (an arena pointer macro or a constant array).  Optional:
``constants(op)`` -> extra int32 arrays the op needs in flash.  Discovered by listing this folder.
"""
