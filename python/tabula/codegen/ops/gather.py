"""GATHER (int8 / int16 / int32 values, int32 indices) -> ``tabula_gather`` on rows of C elements."""
OP = "GATHER"
KERNELS = ("tabula_gather",)
TEMPLATE = ("    st = tabula_gather({{ values }}, {{ indices }}, {{ n }}, {{ k }}, {{ w }}, {{ row_bytes }}, "
            "{{ y }});\n")


def context(op, g, ref) -> dict:
    v, i = g.tensors[op.inputs[0]], g.tensors[op.inputs[1]]
    n, k, c = v.shape
    return dict(values=ref(v.name), indices=ref(i.name), y=ref(op.outputs[0]), n=n, k=k, w=i.shape[1],
                row_bytes=c * v.itemsize)
