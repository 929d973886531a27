/*
 * tabula's glue between the generated model and Arm's Ethos-U core driver: one NPU segment (a Vela command
 * stream) per call. The model (codegen, src/model.c) owns every buffer and describes each segment; this
 * runtime copies the segment's inputs into the scratch at Vela's offsets, cleans the D-cache over them,
 * calls ethosu_invoke_v3 with the base-pointer table {weights, scratch, fast scratch}, invalidates the
 * D-cache over the outputs and copies them back.
 *
 * Build-time defines (SConstruct, from board.toml [npu]): TABULA_NPU_BASE (register base), TABULA_NPU_IRQ
 * (interrupt line; boards/_shared/cortex_m_startup.c routes it to tabula_npu_irq_handler),
 * TABULA_NPU_SECURE, TABULA_NPU_PRIVILEGED (ethosu_init's secure_enable / privilege_enable).
 */
#ifndef TABULA_NPU_H
#define TABULA_NPU_H

#include <stddef.h>
#include <stdint.h>

/* Base-pointer regions of a Vela command stream (Vela's npz: weight_region, scratch_region, scratch_fast_region). */
#define TABULA_NPU_REGION_WEIGHTS 0u
#define TABULA_NPU_REGION_SCRATCH 1u
#define TABULA_NPU_REGION_FAST_SCRATCH 2u
#define TABULA_NPU_N_REGIONS 3

/* tabula_npu_run's results (0 = the segment ran) */
#define TABULA_NPU_OK 0
#define TABULA_NPU_ERR_INIT (-1)      /* ethosu_init failed (no NPU at TABULA_NPU_BASE?) */
#define TABULA_NPU_ERR_RESERVE (-2)   /* ethosu_reserve_driver returned no driver */
#define TABULA_NPU_ERR_INVOKE (-3)    /* ethosu_invoke_v3 failed */
#define TABULA_NPU_ERR_LAYOUT (-4)    /* a segment input/output lies outside its region */

/* What tabula_model_run() returns for a segment's result: 0, or 80 - rc (81..84). */
#define TABULA_NPU_MODEL_STATUS(rc) ((rc) == TABULA_NPU_OK ? 0 : 80 - (rc))

/* One tensor a segment reads or writes: `bytes` at byte `offset` of base-pointer region `region`. */
typedef struct {
    uint32_t region;
    uint32_t offset;
    uint32_t bytes;
} tabula_npu_io;

/* One NPU segment: Vela's command stream (with its COP1 header) and encoded weights, the scratch buffers
 * (shared by every segment: they run one after the other), and where its inputs and outputs sit. */
typedef struct {
    const uint8_t *cmd;
    uint32_t cmd_bytes;
    const uint8_t *weights;
    uint32_t weight_bytes;
    uint8_t *scratch;
    uint32_t scratch_bytes;
    uint8_t *fast_scratch;        /* the scratch itself when the memory mode has no separate fast scratch */
    uint32_t fast_scratch_bytes;
    uint32_t n_inputs;
    uint32_t n_outputs;
    const tabula_npu_io *inputs;
    const tabula_npu_io *outputs;
} tabula_npu_segment;

/* Run one segment: inputs[i] holds the segment's input i (its bytes as the model's arena has them),
 * outputs[i] receives output i. Returns TABULA_NPU_OK or a TABULA_NPU_ERR_* code. */
int tabula_npu_run(const tabula_npu_segment *segment, const uint8_t *const *inputs, uint8_t *const *outputs);

/* The NPU's interrupt (vector 16 + TABULA_NPU_IRQ): hands it to the driver. */
void tabula_npu_irq_handler(void);

#endif /* TABULA_NPU_H */
