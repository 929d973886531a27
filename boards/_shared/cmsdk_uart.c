/*
 * CMSDK APB UART (Arm DDI 0479, "Cortex-M System Design Kit" 4.3), polled: the UART of the MPS2
 * and MPS3 FPGA images and of QEMU's mps2-* / mps3-an547 machines. Registers at TABULA_UART_BASE:
 * DATA 0x00, STATE 0x04 (bit0 TX full, bit1 RX full), CTRL 0x08 (bit0 TX enable, bit1 RX enable),
 * INTSTATUS 0x0C, BAUDDIV 0x10 (>= 16; baud = PCLK / BAUDDIV).
 */
#include <stdint.h>

#include "tabula_board.h"
#include "tabula_board_parts.h"

#define UART_DATA       (*(volatile uint32_t *)(TABULA_UART_BASE + 0x000u))
#define UART_STATE      (*(volatile uint32_t *)(TABULA_UART_BASE + 0x004u))
#define UART_CTRL       (*(volatile uint32_t *)(TABULA_UART_BASE + 0x008u))
#define UART_BAUDDIV    (*(volatile uint32_t *)(TABULA_UART_BASE + 0x010u))
#define UART_STATE_TXFULL 0x1u
#define UART_STATE_RXFULL 0x2u
#define UART_CTRL_TXEN    0x1u
#define UART_CTRL_RXEN    0x2u

void tabula_board_init(void)
{
    UART_BAUDDIV = TABULA_UART_CLOCK_HZ / TABULA_UART_BAUD;
    UART_CTRL = UART_CTRL_TXEN | UART_CTRL_RXEN;
    tabula_ticks_init();
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

void tabula_uart_drain(void)
{
    while (UART_STATE & UART_STATE_TXFULL) {
    }
}
