/*
 * Exit through Arm semihosting SYS_EXIT_EXTENDED (r0 = 0x20, r1 -> {ADP_Stopped_ApplicationExit,
 * code}): QEMU (-semihosting-config enable=on) and the FVP end with the firmware's exit code.
 */
#include <stdint.h>

#include "tabula_board.h"
#include "tabula_board_parts.h"

void tabula_board_exit(int code)
{
    tabula_uart_drain();
    volatile uint32_t block[2] = {0x20026u, (uint32_t)code};
    register uint32_t r0 __asm__("r0") = 0x20u;
    register volatile uint32_t *r1 __asm__("r1") = block;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    for (;;) {
    }
}
