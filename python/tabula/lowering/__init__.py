"""Lowering: a converted PT2E graph -> the integer IR (:mod:`tabula.ir`).  :mod:`.pipeline` drives it;
``ops/<aten op>.py`` lower one op family each."""
