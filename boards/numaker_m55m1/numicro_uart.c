/*
 * NuMicro UART (the UART IP of Nuvoton's M4xx/M2xx/M55M1 families), polled, register level.
 * UART0 at TABULA_UART_BASE, 8N1, baud-rate mode 2 (BAUD.BAUDM1 = BAUDM0 = 1):
 * baud = UART clock / (BRD + 2).
 *
 * UNVERIFIED ON SILICON (see board.toml): the clock-enable register and the multi-function pin
 * values below. The UART register layout is the common NuMicro one.
 */
#include <stdint.h>

#include "tabula_board.h"
#include "tabula_board_parts.h"

#define REG(addr) (*(volatile uint32_t *)(addr))

/* UART registers. */
#define UART_DAT          REG(TABULA_UART_BASE + 0x00u)
#define UART_FIFO         REG(TABULA_UART_BASE + 0x08u)
#define UART_LINE         REG(TABULA_UART_BASE + 0x0Cu)
#define UART_FIFOSTS      REG(TABULA_UART_BASE + 0x18u)
#define UART_BAUD         REG(TABULA_UART_BASE + 0x24u)
#define UART_FIFO_RXRST   (1u << 1)
#define UART_FIFO_TXRST   (1u << 2)
#define UART_LINE_8N1     0x3u          /* WLS = 8 bits, 1 stop, no parity */
#define UART_FIFOSTS_RXOVIF   (1u << 0)
#define UART_FIFOSTS_RXEMPTY  (1u << 14)
#define UART_FIFOSTS_TXFULL   (1u << 23)
#define UART_FIFOSTS_TXEMPTYF (1u << 28)
#define UART_BAUD_MODE2   ((1u << 29) | (1u << 28))

/* System: register write protection, UART0 clock enable, PB12/PB13 multi-function pins. */
#define SYS_REGLCTL       REG(0x40000100u)
#define CLK_UARTCTL       REG(0x400012D8u)  /* UNVERIFIED: CLK base 0x40001000 + UARTCTL */
#define CLK_UARTCTL_UART0CKEN (1u << 0)
#define SYS_GPB_MFP3      REG(0x40000300u + 0x1Cu)   /* PB12..PB15, 8 bits per pin */
#define MFP_UART0         0x6u               /* UNVERIFIED: PB12 = UART0_RXD, PB13 = UART0_TXD */

static void unlock_registers(void)
{
    SYS_REGLCTL = 0x59u;
    SYS_REGLCTL = 0x16u;
    SYS_REGLCTL = 0x88u;
}

void tabula_board_init(void)
{
    unlock_registers();
    CLK_UARTCTL |= CLK_UARTCTL_UART0CKEN;
    SYS_GPB_MFP3 = (SYS_GPB_MFP3 & ~0x1F1Fu) | (MFP_UART0 << 0) | (MFP_UART0 << 8);
    SYS_REGLCTL = 0u;

    UART_FIFO |= UART_FIFO_RXRST | UART_FIFO_TXRST;
    UART_LINE = UART_LINE_8N1;
    UART_BAUD = UART_BAUD_MODE2 | (((TABULA_UART_CLOCK_HZ + TABULA_UART_BAUD / 2u) / TABULA_UART_BAUD) - 2u);

    tabula_ticks_init();
}

void tabula_board_putc(uint8_t c)
{
    while (UART_FIFOSTS & UART_FIFOSTS_TXFULL) {
    }
    UART_DAT = c;
}

int tabula_board_getc(void)
{
    while (UART_FIFOSTS & UART_FIFOSTS_RXEMPTY) {
        if (UART_FIFOSTS & UART_FIFOSTS_RXOVIF) {
            UART_FIFOSTS = UART_FIFOSTS_RXOVIF;   /* write 1 to clear; the host resends */
        }
    }
    return (int)(UART_DAT & 0xFFu);
}

void tabula_uart_drain(void)
{
    while (!(UART_FIFOSTS & UART_FIFOSTS_TXEMPTYF)) {
    }
}
