"""TABLE16: codegen's fused int16 table op (:mod:`tabula.codegen.fuse`) -> ``tabula_table16_s16``."""

OP, TEMPLATE = "TABLE16", "table16"


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
