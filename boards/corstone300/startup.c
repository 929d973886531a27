/*
 * Corstone-300 startup: vector table, reset, fault handlers.
 * Reset: stack limit, FPU + MVE access (CP10/CP11), .data copy, .bss zero, main().
 * Faults end the run through semihosting with exit code 100 + exception number, so a crash shows
 * up as a failed process (QEMU exit code 103 = HardFault) rather than a hang.
 */
#include <stdint.h>

#include "tabula_board.h"

extern uint32_t __StackTop[], __StackLimit[];
extern uint32_t __data_start__[], __data_end__[], __data_load__[];
extern uint32_t __bss_start__[], __bss_end__[];

int main(void);
void Reset_Handler(void);
void Default_Handler(void);
void SysTick_Handler(void);   /* board.c */

#define SCB_CPACR (*(volatile uint32_t *)0xE000ED88u)
#define SCB_ICSR  (*(volatile uint32_t *)0xE000ED04u)

#define N_EXTERNAL_IRQS 96     /* AN547: 96 expansion interrupts */

typedef void (*vector_fn)(void);

__attribute__((section(".vectors"), used, aligned(512)))
const vector_fn tabula_vectors[16 + N_EXTERNAL_IRQS] = {
    (vector_fn)(uintptr_t)__StackTop,   /* initial MSP */
    Reset_Handler,
    Default_Handler,                    /* NMI */
    Default_Handler,                    /* HardFault */
    Default_Handler,                    /* MemManage */
    Default_Handler,                    /* BusFault */
    Default_Handler,                    /* UsageFault */
    Default_Handler,                    /* SecureFault */
    0, 0, 0,
    Default_Handler,                    /* SVCall */
    Default_Handler,                    /* DebugMonitor */
    0,
    Default_Handler,                    /* PendSV */
    SysTick_Handler,
    [16 ... 16 + N_EXTERNAL_IRQS - 1] = Default_Handler,
};

void Default_Handler(void)
{
    uint32_t exception = SCB_ICSR & 0x1FFu;
    tabula_board_exit((int)(100u + exception));
}

/* Before any C that may touch FP/MVE registers: grant full access to CP10 and CP11 (FPU and
 * Helium share them on Armv8.1-M). The core boots Secure with the SAU off, so NSACR is moot. */
__attribute__((naked, noreturn)) void Reset_Handler(void)
{
    __asm__ volatile(
        "ldr  r0, =__StackLimit   \n"
        "msr  msplim, r0          \n"   /* stack overflow -> UsageFault (STKOF) */
        "ldr  r0, =0xE000ED88     \n"
        "ldr  r1, [r0]            \n"
        "orr  r1, r1, #(0xF << 20)\n"
        "str  r1, [r0]            \n"
        "dsb                      \n"
        "isb                      \n"
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
