"""One module per lowered aten op family; each lists the aten op names it lowers in ``ATEN`` and
defines ``lower(ctx, node)``.  :mod:`tabula.lowering.pipeline` discovers them by listing this folder."""
