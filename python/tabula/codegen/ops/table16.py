"""TABLE16: codegen's fused int16 table op (:mod:`tabula.codegen.fuse`) -> ``tabula_table16_s16``."""
OP = "TABLE16"
KERNELS = ("tabula_table16_s16",)
TEMPLATE = """\
    {
{% if n_terms %}
        static const int32_t zoom[{{ n_terms }}] = { {{ zooms }} };
        static const int32_t centre[{{ n_terms }}] = { {{ centres }} };
        static const int16_t *const hi[{{ n_terms }}] = { {{ his }} };
{% if split %}
        static const int16_t *const lo[{{ n_terms }}] = { {{ los }} };
{% endif %}
{% endif %}
{% if n_ramps %}
        static const int32_t ramps[{{ 5 * n_ramps }}] = { {{ ramps }} }; /* lo, hi, multiplier, shift, sign */
{% endif %}
{% if wide %}
        static const int32_t final_step[3] = { {{ final }} }; /* MUL shift (-1: none), multiplier, shift */
{% endif %}
        st = tabula_table16_s16({{ args }});
    }
"""


def context(op, g, ref) -> dict:
    x = g.tensors[op.inputs[0]]
    a = op.attrs
    terms, ramps, product = a["terms"], a.get("ramps") or [], a.get("product")
    if product is not None:
        final = [int(product["mul_shift"]), int(product["multiplier"]), int(product["shift"])]
    else:
        final = [-1, 1 << 30, 30 + int(a.get("frac_bits", 14))]
    return dict(
        x=ref(x.name), y=ref(op.outputs[0]), count=x.numel, n_terms=len(terms),
        zooms=", ".join(str(int(t["zoom"])) for t in terms),
        centres=", ".join(str(int(t.get("centre", 0))) for t in terms),
        his=", ".join(ref(t["hi"]) for t in terms),
        los=", ".join("NULL" if t.get("lo") is None else ref(t["lo"]) for t in terms),
        split=any(t.get("lo") is not None for t in terms),
        n_ramps=len(ramps),
        ramps=", ".join(str(int(r[k])) for r in ramps for k in ("lo", "hi", "multiplier", "shift", "sign")),
        wide=bool(a.get("wide", False)), final=", ".join(str(v) for v in final),
        args=", ".join([ref(x.name), str(x.numel), str(len(terms))] + (["zoom", "centre", "hi"] if terms else ["NULL"] * 3)
                       + ["lo" if any(t.get("lo") is not None for t in terms) else "NULL", str(len(ramps)),
                          "ramps" if ramps else "NULL", "final_step" if a.get("wide") else "NULL", ref(op.outputs[0])]),
    )
