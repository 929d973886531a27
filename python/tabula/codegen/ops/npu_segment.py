"""NPU_SEGMENT (codegen only, :mod:`tabula.codegen.npu`): one NPU segment of an NPU build -> ``tabula_npu_run``
(``firmware_templates/runtime/npu/tabula_npu.c``): its inputs copied into the scratch at Vela's offsets, the
command stream run by the Ethos-U driver, its outputs copied back into the arena.  A failed segment makes
``tabula_model_run()`` return ``80 - rc`` (81..84: TABULA_NPU_ERR_*)."""
OP = "NPU_SEGMENT"
KERNELS = ()
TEMPLATE = """\
    {
        const uint8_t *const npu_in[{{ ins|length }}] = { {% for x in ins %}(const uint8_t *){{ x }}{{ ", " if not loop.last }}{% endfor %} };
        uint8_t *const npu_out[{{ outs|length }}] = { {% for y in outs %}(uint8_t *){{ y }}{{ ", " if not loop.last }}{% endfor %} };
        st = (tabula_status)TABULA_NPU_MODEL_STATUS(tabula_npu_run(&tabula_npu_seg{{ k }}, npu_in, npu_out));
    }
"""


def context(op, g, ref) -> dict:
    return dict(ins=[ref(n) for n in op.inputs], outs=[ref(n) for n in op.outputs], k=int(op.attrs["segment"]))
