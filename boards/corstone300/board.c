/*
 * Corstone-300 board layer (tabula_board.h): CMSDK APB UART0 polled, SysTick as a 32-bit
 * free-running tick counter, exit through semihosting.
 */
#include <stdint.h>

#include "tabula_board.h"

/* CMSDK APB UART (Arm DDI 0479): DATA, STATE (bit0 TX full, bit1 RX full), CTRL, INTSTATUS,
 * BAUDDIV. */
#define UART0_BASE      0x49303000u
#define UART_DATA       (*(volatile uint32_t *)(UART0_BASE + 0x000u))
#define UART_STATE      (*(volatile uint32_t *)(UART0_BASE + 0x004u))
#define UART_CTRL       (*(volatile uint32_t *)(UART0_BASE + 0x008u))
#define UART_BAUDDIV    (*(volatile uint32_t *)(UART0_BASE + 0x010u))
#define UART_STATE_TXFULL 0x1u
#define UART_STATE_RXFULL 0x2u
#define UART_CTRL_TXEN    0x1u
#define UART_CTRL_RXEN    0x2u
#define UART_PCLK_HZ    25000000u    /* AN547 APB peripheral clock */
#define UART_BAUD       115200u

/* SysTick (Armv8-M ARM B11.2). */
#define SYST_CSR        (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR        (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR        (*(volatile uint32_t *)0xE000E018u)
#define SYST_CSR_ENABLE    0x1u
#define SYST_CSR_TICKINT   0x2u
#define SYST_CSR_CLKSOURCE 0x4u      /* processor clock */
#define SYST_RELOAD        0x00FFFFFFu
#define SCB_ICSR        (*(volatile uint32_t *)0xE000ED04u)
#define SCB_ICSR_PENDSTSET (1u << 26)

static volatile uint32_t systick_wraps;   /* each wrap is 2^24 ticks */

void SysTick_Handler(void);
void SysTick_Handler(void)
{
    systick_wraps++;
}

void tabula_board_init(void)
{
    UART_BAUDDIV = UART_PCLK_HZ / UART_BAUD;
    UART_CTRL = UART_CTRL_TXEN | UART_CTRL_RXEN;

    SYST_CSR = 0u;
    SYST_RVR = SYST_RELOAD;
    SYST_CVR = 0u;                     /* any write clears; counting starts from the reload */
    SYST_CSR = SYST_CSR_CLKSOURCE | SYST_CSR_TICKINT | SYST_CSR_ENABLE;
}

void tabula_board_putc(uint8_t c)
{
    while (UART_STATE & UART_STATE_TXFULL) {
    }
    UART_DATA = c;
}

int tabula_board_getc(void)
{
    while (!(UART_STATE & UART_STATE_RXFULL)) {
    }
    return (int)(UART_DATA & 0xFFu);
}

uint32_t tabula_board_ticks(void)
{
    uint32_t hi, lo, pending;
    do {
        hi = systick_wraps;
        lo = SYST_RELOAD - SYST_CVR;            /* ticks into the current period */
        pending = SCB_ICSR & SCB_ICSR_PENDSTSET;
    } while (hi != systick_wraps);
    /* The counter wrapped before `lo` was read but its interrupt is not taken yet. */
    if (pending && lo < (SYST_RELOAD / 2u)) {
        hi++;
    }
    return (hi << 24) + lo;
}

/* Arm semihosting SYS_EXIT_EXTENDED: r0 = 0x20, r1 -> {ADP_Stopped_ApplicationExit, code}. */
void tabula_board_exit(int code)
{
    while (UART_STATE & UART_STATE_TXFULL) {
    }
    volatile uint32_t block[2] = {0x20026u, (uint32_t)code};
    register uint32_t r0 __asm__("r0") = 0x20u;
    register volatile uint32_t *r1 __asm__("r1") = block;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    for (;;) {
    }
}
