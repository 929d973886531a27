/*
 * Parts shared by the board layers in boards/<name>/ (the runtime only sees tabula_board.h).
 * A board's board.toml lists which of the boards/_shared C files it links: one tick source and one exit.
 *
 *   systick_ticks.c   SysTick on the processor clock, 2^24-tick wraps counted in its interrupt
 *                     (QEMU: no DWT there, and SysTick follows -icount virtual time)
 *   dwt_ticks.c       DWT->CYCCNT, the core's cycle counter (silicon: M4/M7/M33/M55)
 *   semihost_exit.c   semihosting SYS_EXIT_EXTENDED (QEMU, FVP: the emulator exits with the code)
 *   halt_exit.c       park the core (a real board has no one to return to; the host has STATUS)
 *
 * Board-specific values come as -D defines generated from board.toml's [uart] table by
 * toolchain/arm_gnu.py: TABULA_UART_BASE, TABULA_UART_CLOCK_HZ, TABULA_UART_BAUD.
 */
#ifndef TABULA_BOARD_PARTS_H
#define TABULA_BOARD_PARTS_H

#include <stdint.h>

/* Start the tick source (called from tabula_board_init()). */
void tabula_ticks_init(void);

/* Wait until the UART has sent every byte it holds (called before the board exits). */
void tabula_uart_drain(void);

#endif /* TABULA_BOARD_PARTS_H */
