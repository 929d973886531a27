"""C suffixes of IR dtypes (kernel names are ``tabula_<op>_<suffix>``)."""

SFX = {"int8": "s8", "int16": "s16", "int32": "s32", "int64": "s64"}
