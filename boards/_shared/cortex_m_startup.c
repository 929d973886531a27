/*
 * Startup for every Cortex-M board in boards/ that links boards/_shared/cortex_m_sections.ld:
 * vector table, reset, fault handlers. Works for Armv7-M (M4, M7) and Armv8-M / 8.1-M (M33, M55).
 *
 * Reset: stack limit (MSPLIM, Armv8-M only), FPU/MVE access (CP10/CP11) when the build uses
 * them, .data copy from its load address (flash on a real board), .bss zero, main(), exit.
 * Faults end the run with exit code 100 + exception number (103 = HardFault), so a crash is a
 * failed run (QEMU's exit code; on a board the host times out and says what it received).
 *
 * TABULA_N_IRQS (board.toml n_irqs) sizes the table: the SoC's external interrupt count.
 * TABULA_NPU_IRQ (an NPU build: board.toml [npu] irq) routes that line to tabula_npu_irq_handler
 * (firmware_templates/runtime/npu/tabula_npu.c), every other one to Default_Handler.
 */
#include <stdint.h>

#include "tabula_board.h"

#ifndef TABULA_N_IRQS
#define TABULA_N_IRQS 32
#endif

extern uint32_t __StackTop[], __StackLimit[];
extern uint32_t __data_start__[], __data_end__[], __data_load__[];
extern uint32_t __bss_start__[], __bss_end__[];

int main(void);
void Reset_Handler(void);
void Default_Handler(void);
void SysTick_Handler(void);   /* the board's tick source */
#ifdef TABULA_NPU_IRQ
void tabula_npu_irq_handler(void);
#endif

#define SCB_CPACR (*(volatile uint32_t *)0xE000ED88u)
#define SCB_ICSR  (*(volatile uint32_t *)0xE000ED04u)

typedef void (*vector_fn)(void);

__attribute__((section(".vectors"), used, aligned(512)))
const vector_fn tabula_vectors[16 + TABULA_N_IRQS] = {
    (vector_fn)(uintptr_t)__StackTop,   /* initial MSP */
    Reset_Handler,
    Default_Handler,                    /* NMI */
    Default_Handler,                    /* HardFault */
    Default_Handler,                    /* MemManage */
    Default_Handler,                    /* BusFault */
    Default_Handler,                    /* UsageFault */
    Default_Handler,                    /* SecureFault (Armv8-M) */
    0, 0, 0,
    Default_Handler,                    /* SVCall */
    Default_Handler,                    /* DebugMonitor */
    0,
    Default_Handler,                    /* PendSV */
    SysTick_Handler,
#ifdef TABULA_NPU_IRQ
    [16 ... 16 + TABULA_NPU_IRQ - 1] = Default_Handler,
    [16 + TABULA_NPU_IRQ] = tabula_npu_irq_handler,
    [16 + TABULA_NPU_IRQ + 1 ... 16 + TABULA_N_IRQS - 1] = Default_Handler,
#else
    [16 ... 16 + TABULA_N_IRQS - 1] = Default_Handler,
#endif
};

void Default_Handler(void)
{
    uint32_t exception = SCB_ICSR & 0x1FFu;
    tabula_board_exit((int)(100u + exception));
}

#if defined(__ARM_ARCH_8M_MAIN__) || defined(__ARM_ARCH_8_1M_MAIN__)
#define TABULA_HAS_MSPLIM 1
#endif
#if defined(__ARM_FP) || defined(__ARM_FEATURE_MVE)
#define TABULA_NEEDS_CP10_CP11 1
#endif

/* Runs before any C that may touch FP/MVE registers. */
__attribute__((naked, noreturn)) void Reset_Handler(void)
{
    __asm__ volatile(
#ifdef TABULA_HAS_MSPLIM
        "ldr  r0, =__StackLimit   \n"
        "msr  msplim, r0          \n"   /* stack overflow -> UsageFault (STKOF) */
#endif
#ifdef TABULA_NEEDS_CP10_CP11
        "ldr  r0, =0xE000ED88     \n"   /* CPACR: full access to CP10 and CP11 */
        "ldr  r1, [r0]            \n"
        "orr  r1, r1, #(0xF << 20)\n"
        "str  r1, [r0]            \n"
        "dsb                      \n"
        "isb                      \n"
#endif
        "b    tabula_reset_c      \n");
}

__attribute__((noreturn, used)) void tabula_reset_c(void);
__attribute__((noreturn, used)) void tabula_reset_c(void)
{
    volatile uint32_t *dst = __data_start__;
    const volatile uint32_t *src = __data_load__;
    while (dst < __data_end__) {
        *dst++ = *src++;
    }
    for (dst = __bss_start__; dst < __bss_end__; ) {
        *dst++ = 0u;
    }
    tabula_board_exit(main());
}
