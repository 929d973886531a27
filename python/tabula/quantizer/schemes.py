"""The names of the quantization schemes: importable without torch (SConstruct checks ``scheme=``
with it before anything runs).  What each scheme means: :data:`tabula.quantizer.annotator.SCHEMES`
(``int8``, ``a16w8``) and :mod:`tabula.quantizer.mixed` (``mixed``: int8 or int16 activations per
layer, chosen from measured sensitivity)."""

MIXED = "mixed"
SCHEME_NAMES = ("int8", "a16w8", MIXED)
