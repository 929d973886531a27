/*
 * Exit on a real board: nobody to return to. The host already has the exit code (STATUS frame)
 * and the EOT; drain the UART and park the core until the next reset (pyocd reset or the button).
 * A semihosting BKPT here would lock the core up when no debugger is attached.
 */
#include "tabula_board.h"
#include "tabula_board_parts.h"

void tabula_board_exit(int code)
{
    (void)code;
    tabula_uart_drain();
    for (;;) {
        __asm__ volatile("wfi");
    }
}
