/*
 * tabula_npu.c: run one NPU segment through Arm's Ethos-U core driver (tabula_npu.h says what and why).
 *
 * The driver is the user's (ethosu_driver=<path> / $ETHOSU_DRIVER: github.com/ARM-software/ethos-u-core-driver,
 * Apache-2.0); this file only calls its public API: ethosu_init, ethosu_reserve_driver, ethosu_invoke_v3,
 * ethosu_release_driver and ethosu_irq_handler, declared by its ethosu_driver.h. The tests build it against
 * a stand-in with the same API (tests/fixtures/ethosu_standin/, npu_driver=standin), which runs each segment
 * through tabula's own kernels on QEMU.
 *
 * D-cache: the NPU reads and writes memory behind the core's data cache. Before the invoke the lines holding
 * the inputs just copied are cleaned to memory; after it the lines of the outputs are invalidated before
 * they are read (the scratch is written by the NPU only, so no other line of it can be dirty). Cache
 * maintenance by address (Armv7-M / Armv8-M SCB DCCMVAC / DCIMVAC), only when CCR.DC says the cache is on.
 */
#include <string.h>

#include "ethosu_driver.h"
#include "tabula_npu.h"

#ifndef TABULA_NPU_BASE
#error "TABULA_NPU_BASE (board.toml [npu] base) is not defined"
#endif
#ifndef TABULA_NPU_IRQ
#error "TABULA_NPU_IRQ (board.toml [npu] irq) is not defined"
#endif
#ifndef TABULA_NPU_SECURE
#define TABULA_NPU_SECURE 1
#endif
#ifndef TABULA_NPU_PRIVILEGED
#define TABULA_NPU_PRIVILEGED 1
#endif

#define SCB_CCR (*(volatile uint32_t *)0xE000ED14u)
#define SCB_CCR_DC (1u << 16)
#define SCB_DCIMVAC (*(volatile uint32_t *)0xE000EF5Cu)
#define SCB_DCCMVAC (*(volatile uint32_t *)0xE000EF68u)
#define NVIC_ISER ((volatile uint32_t *)0xE000E100u)
#define DCACHE_LINE 32u

static struct ethosu_driver npu_driver;
static int npu_ready;

static void barrier(void)
{
    __asm volatile("dsb 0xF\n\tisb 0xF" ::: "memory");
}

static void dcache_by_line(volatile uint32_t *op, const uint8_t *p, uint32_t bytes)
{
    if (!(SCB_CCR & SCB_CCR_DC) || bytes == 0u) {
        return;
    }
    uintptr_t a = (uintptr_t)p & ~(uintptr_t)(DCACHE_LINE - 1u);
    uintptr_t end = (uintptr_t)p + bytes;
    barrier();
    for (; a < end; a += DCACHE_LINE) {
        *op = (uint32_t)a;
    }
    barrier();
}

void tabula_npu_irq_handler(void)
{
    ethosu_irq_handler(&npu_driver);
}

static int npu_init(const tabula_npu_segment *s)
{
    if (npu_ready) {
        return TABULA_NPU_OK;
    }
    /* the fast memory ethosu_init takes is the fast scratch, when the memory mode has a separate one */
    const void *fast = s->fast_scratch != s->scratch ? (const void *)s->fast_scratch : NULL;
    size_t fast_bytes = s->fast_scratch != s->scratch ? (size_t)s->fast_scratch_bytes : 0u;
    if (ethosu_init(&npu_driver, (void *)(uintptr_t)TABULA_NPU_BASE, fast, fast_bytes, TABULA_NPU_SECURE,
                    TABULA_NPU_PRIVILEGED) != 0) {
        return TABULA_NPU_ERR_INIT;
    }
    NVIC_ISER[TABULA_NPU_IRQ / 32u] = 1u << (TABULA_NPU_IRQ % 32u);
    npu_ready = 1;
    return TABULA_NPU_OK;
}

static uint8_t *region_base(const tabula_npu_segment *s, uint32_t region, uint32_t *bytes)
{
    if (region == TABULA_NPU_REGION_SCRATCH) {
        *bytes = s->scratch_bytes;
        return s->scratch;
    }
    if (region == TABULA_NPU_REGION_FAST_SCRATCH) {
        *bytes = s->fast_scratch_bytes;
        return s->fast_scratch;
    }
    *bytes = 0u;   /* the weights region is read-only: no input or output lives there */
    return NULL;
}

static uint8_t *io_address(const tabula_npu_segment *s, const tabula_npu_io *io)
{
    uint32_t size = 0u;
    uint8_t *base = region_base(s, io->region, &size);
    if (base == NULL || io->offset > size || io->bytes > size - io->offset) {
        return NULL;
    }
    return base + io->offset;
}

int tabula_npu_run(const tabula_npu_segment *s, const uint8_t *const *inputs, uint8_t *const *outputs)
{
    int rc = npu_init(s);
    if (rc != TABULA_NPU_OK) {
        return rc;
    }
    for (uint32_t i = 0u; i < s->n_inputs; i++) {
        uint8_t *dst = io_address(s, &s->inputs[i]);
        if (dst == NULL) {
            return TABULA_NPU_ERR_LAYOUT;
        }
        memcpy(dst, inputs[i], s->inputs[i].bytes);
        dcache_by_line(&SCB_DCCMVAC, dst, s->inputs[i].bytes);
    }

    uint64_t base[TABULA_NPU_N_REGIONS];
    size_t size[TABULA_NPU_N_REGIONS];
    base[TABULA_NPU_REGION_WEIGHTS] = (uint64_t)(uintptr_t)s->weights;
    size[TABULA_NPU_REGION_WEIGHTS] = s->weight_bytes;
    base[TABULA_NPU_REGION_SCRATCH] = (uint64_t)(uintptr_t)s->scratch;
    size[TABULA_NPU_REGION_SCRATCH] = s->scratch_bytes;
    base[TABULA_NPU_REGION_FAST_SCRATCH] = (uint64_t)(uintptr_t)s->fast_scratch;
    size[TABULA_NPU_REGION_FAST_SCRATCH] = s->fast_scratch_bytes;

    struct ethosu_driver *drv = ethosu_reserve_driver();
    if (drv == NULL) {
        return TABULA_NPU_ERR_RESERVE;
    }
    rc = ethosu_invoke_v3(drv, s->cmd, (int)s->cmd_bytes, base, size, TABULA_NPU_N_REGIONS, NULL);
    ethosu_release_driver(drv);
    if (rc != 0) {
        return TABULA_NPU_ERR_INVOKE;
    }

    for (uint32_t i = 0u; i < s->n_outputs; i++) {
        const uint8_t *src = io_address(s, &s->outputs[i]);
        if (src == NULL) {
            return TABULA_NPU_ERR_LAYOUT;
        }
        dcache_by_line(&SCB_DCIMVAC, src, s->outputs[i].bytes);
        memcpy(outputs[i], src, s->outputs[i].bytes);
    }
    return TABULA_NPU_OK;
}
