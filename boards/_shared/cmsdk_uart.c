/*
 * CMSDK APB UART (Arm DDI 0479, "Cortex-M System Design Kit" 4.3), polled (a wait for a byte sleeps in
 * WFI, woken by the RX interrupt, below): the UART of the MPS2 and MPS3 FPGA images and of QEMU's
 * mps2-* / mps3-an547 machines. Registers at TABULA_UART_BASE: DATA 0x00, STATE 0x04 (bit0 TX full,
 * bit1 RX full), CTRL 0x08 (bit0 TX enable, bit1 RX enable, bit3 RX interrupt enable), INTSTATUS 0x0C
 * (write 1s: clear), BAUDDIV 0x10 (>= 16; baud = PCLK / BAUDDIV).
 */
#include <stdint.h>

#include "tabula_board.h"
#include "tabula_board_parts.h"

#define UART_DATA       (*(volatile uint32_t *)(TABULA_UART_BASE + 0x000u))
#define UART_STATE      (*(volatile uint32_t *)(TABULA_UART_BASE + 0x004u))
#define UART_CTRL       (*(volatile uint32_t *)(TABULA_UART_BASE + 0x008u))
#define UART_INTSTATUS  (*(volatile uint32_t *)(TABULA_UART_BASE + 0x00Cu))   /* write 1s: INTCLEAR */
#define UART_BAUDDIV    (*(volatile uint32_t *)(TABULA_UART_BASE + 0x010u))
#define UART_STATE_TXFULL 0x1u
#define UART_STATE_RXFULL 0x2u
#define UART_CTRL_TXEN    0x1u
#define UART_CTRL_RXEN    0x2u
#define UART_CTRL_RXINTEN 0x8u
#define UART_INT_RX       0x2u
/* NVIC set-enable, clear-enable, set-pending and clear-pending words (Armv7-M / Armv8-M B3.4 / B11.2) */
#define NVIC_ISER(n)    (*(volatile uint32_t *)(0xE000E100u + 4u * (uint32_t)(n)))
#define NVIC_ICER(n)    (*(volatile uint32_t *)(0xE000E180u + 4u * (uint32_t)(n)))
#define NVIC_ISPR(n)    (*(volatile uint32_t *)(0xE000E200u + 4u * (uint32_t)(n)))
#define NVIC_ICPR(n)    (*(volatile uint32_t *)(0xE000E280u + 4u * (uint32_t)(n)))
#define NVIC_WORDS      16

/*
 * Waiting for a byte without spinning.  The UART raises its RX interrupt (RXINTEN) for every byte, on one
 * NVIC line or more (the MPS2 / MPS3 images wire RX and a combined UART interrupt separately); the lines are
 * not in board.toml, so the first byte finds them: the NVIC lines pending after that byte and not enabled
 * (so no handler ever runs for them).  From then on a wait enables those lines with PRIMASK set and sleeps in WFI: a
 * pending enabled interrupt wakes WFI without being taken (Armv7-M B1.5.19, Armv8-M B3.16), so the core
 * idles until the next byte (an emulator stops running instructions; silicon stops its clock).  SysTick's
 * wrap interrupt, masked too, is taken when PRIMASK clears (and also ends a WFI: the loop re-checks RXFULL).
 * No pending line after the first byte (an emulator without the interrupt): the busy wait, as before.
 */
static uint32_t rx_lines[NVIC_WORDS];   /* the UART's pending lines after a byte, per NVIC word */
static int rx_state;                    /* 0: not known yet; 1: rx_lines found; 2: none (poll) */

void tabula_board_init(void)
{
    UART_BAUDDIV = TABULA_UART_CLOCK_HZ / TABULA_UART_BAUD;
    UART_INTSTATUS = UART_INT_RX;
    UART_CTRL = UART_CTRL_TXEN | UART_CTRL_RXEN | UART_CTRL_RXINTEN;
    tabula_ticks_init();
}

static void wait_rx(void)
{
    int n;
    __asm volatile("cpsid i" ::: "memory");
    for (n = 0; n < NVIC_WORDS; ++n) {
        if (rx_lines[n]) {
            NVIC_ISER(n) = rx_lines[n];
        }
    }
    while (!(UART_STATE & UART_STATE_RXFULL)) {
        __asm volatile("dsb\n\twfi" ::: "memory");
    }
    for (n = 0; n < NVIC_WORDS; ++n) {
        if (rx_lines[n]) {
            NVIC_ICER(n) = rx_lines[n];
        }
    }
    __asm volatile("cpsie i" ::: "memory");
}

void tabula_board_putc(uint8_t c)
{
    while (UART_STATE & UART_STATE_TXFULL) {
    }
    UART_DATA = c;
}

int tabula_board_getc(void)
{
    int c, n;
    if (rx_state == 1 && !(UART_STATE & UART_STATE_RXFULL)) {
        wait_rx();
    }
    while (!(UART_STATE & UART_STATE_RXFULL)) {
    }
    c = (int)(UART_DATA & 0xFFu);
    if (rx_state == 0) {
        rx_state = 2;
        for (n = 0; n < NVIC_WORDS; ++n) {
            rx_lines[n] = NVIC_ISPR(n) & ~NVIC_ISER(n);   /* never a line some driver enabled (an NPU's) */
            rx_state = rx_lines[n] ? 1 : rx_state;
        }
    }
    UART_INTSTATUS = UART_INT_RX;   /* the lines drop, then their pending bits clear */
    for (n = 0; rx_state == 1 && n < NVIC_WORDS; ++n) {
        if (rx_lines[n]) {
            NVIC_ICPR(n) = rx_lines[n];
        }
    }
    return c;
}

void tabula_uart_drain(void)
{
    while (UART_STATE & UART_STATE_TXFULL) {
    }
}
