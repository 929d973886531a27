"""One module per IR op: ``OP`` (TOSA name), ``TEMPLATE`` (``firmware_templates/ops/<name>.c.j2``)
and ``context(op, ref)`` giving the template its values; ``ref(name)`` is the C expression of a
tensor (an arena pointer macro or a constant array).  Discovered by listing this folder."""
