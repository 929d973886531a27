/*
 * The board layer: what every board (boards/<name>/board.c) provides to the runtime.
 * The runtime (main.c, protocol) uses nothing else from the hardware.
 */
#ifndef TABULA_BOARD_H
#define TABULA_BOARD_H

#include <stdint.h>

/* Bring up clocks, UART and the tick counter. Called once, first thing in main(). */
void tabula_board_init(void);

/* Send one byte over the result link (UART0 on boards, stdout on host). Blocking. */
void tabula_board_putc(uint8_t c);

/* Receive one byte from the link. Blocking; returns 0..255, or -1 when the link is closed
 * (host: end of stdin). */
int tabula_board_getc(void);

/* Free-running tick counter; TABULA_BOARD_TICK_HZ ticks per second (0 when unknown).
 * Wraps modulo 2^32. */
uint32_t tabula_board_ticks(void);

/* Stop with an exit code (semihosting SYS_EXIT_EXTENDED on QEMU, exit() on host). */
void tabula_board_exit(int code) __attribute__((noreturn));

#endif /* TABULA_BOARD_H */
