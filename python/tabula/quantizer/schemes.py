"""The names of the quantization schemes: importable without torch (SConstruct checks ``scheme=``
with it before anything runs).  What each scheme means: :data:`tabula.quantizer.annotator.SCHEMES`."""

SCHEME_NAMES = ("int8", "a16w8")
