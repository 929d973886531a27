"""TABLE16: codegen's fused int16 table op (:mod:`tabula.codegen.fuse`) -> ``tabula_table16_s16``."""
OP = "TABLE16"
KERNELS = ("tabula_table16_s16",)
TEMPLATE = """\
    {
        static const int32_t zoom[{{ n_terms }}] = { {{ zooms }} };
        static const int16_t *const hi[{{ n_terms }}] = { {{ his }} };
{% if split %}
        static const int16_t *const lo[{{ n_terms }}] = { {{ los }} };
        st = tabula_table16_s16({{ x }}, {{ count }}, {{ n_terms }}, zoom, hi, lo, {{ y }});
{% else %}
        st = tabula_table16_s16({{ x }}, {{ count }}, {{ n_terms }}, zoom, hi, NULL, {{ y }});
{% endif %}
    }
"""


def context(op, g, ref) -> dict:
    x = g.tensors[op.inputs[0]]
    terms = op.attrs["terms"]
    return dict(
        x=ref(x.name), y=ref(op.outputs[0]), count=x.numel, n_terms=len(terms),
        zooms=", ".join(str(int(t["zoom"])) for t in terms),
        his=", ".join(ref(t["hi"]) for t in terms),
        los=", ".join("NULL" if t.get("lo") is None else ref(t["lo"]) for t in terms),
        split=any(t.get("lo") is not None for t in terms),
    )
