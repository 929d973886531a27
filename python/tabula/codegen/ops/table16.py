"""TABLE16: codegen's fused int16 table op (:mod:`tabula.codegen.fusion`) -> ``tabula_table16_s16`` (tables
only) or ``tabula_table16_ramps_s16`` (with ramps or a product: the exact piecewise-linear ops)."""
OP = "TABLE16"
KERNELS = ("tabula_table16_s16", "tabula_table16_ramps_s16")
TEMPLATE = """\
    {
{% if n_terms %}
        static const int32_t zoom[{{ n_terms }}] = { {{ zooms }} };
{% if centred %}
        static const int32_t centre[{{ n_terms }}] = { {{ centres }} };
{% endif %}
        static const int16_t *const hi[{{ n_terms }}] = { {{ his }} };
{% if split %}
        static const int16_t *const lo[{{ n_terms }}] = { {{ los }} };
{% endif %}
{% endif %}
{% if n_ramps %}
        static const int32_t ramps[{{ 5 * n_ramps }}] = { {{ ramps }} }; /* lo, hi, multiplier, shift, sign */
{% endif %}
{% if n_ramps or product %}
        static const int32_t final_step[3] = { {{ final }} }; /* MUL shift (-1: none), multiplier, shift */
{% endif %}
        st = {{ kernel }}({{ args }});
    }
"""


def context(op, g, ref) -> dict:
    x = g.tensors[op.inputs[0]]
    a = op.attrs
    terms, ramps, product = a["terms"], a.get("ramps") or [], a.get("product")
    centred = any(int(t.get("centre", 0)) for t in terms)
    if product is not None:
        final = [int(product["mul_shift"]), int(product["multiplier"]), int(product["shift"])]
    elif a.get("final") is not None:  # a step plan: RESCALE by 1 / s_out
        final = [-1, int(a["final"][0]), int(a["final"][1])]
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
        centred=centred, wide=bool(a.get("wide", False)), final=", ".join(str(v) for v in final), product=product is not None,
        kernel="tabula_table16_ramps_s16" if (ramps or product is not None) else "tabula_table16_s16",
        args=", ".join([ref(x.name), str(x.numel), str(len(terms))] + (["zoom", "centre" if centred else "NULL", "hi"] if terms else ["NULL"] * 3)
                       + ["lo" if any(t.get("lo") is not None for t in terms) else "NULL"]
                       + ([str(len(ramps)), "ramps" if ramps else "NULL", "final_step"] if (ramps or product is not None) else [])
                       + [ref(op.outputs[0])]),
    )
