/*
 * Ticks from the DWT cycle counter (Armv7-M ARM C1.8 / Armv8-M ARM B13): CYCCNT counts core
 * clock cycles, 32 bits, wrapping. Enable trace (DEMCR.TRCENA) first. QEMU does not model the
 * DWT, so emulated boards use systick_ticks.c instead.
 */
#include <stdint.h>

#include "tabula_board.h"
#include "tabula_board_parts.h"

#define DEMCR           (*(volatile uint32_t *)0xE000EDFCu)
#define DEMCR_TRCENA    (1u << 24)
#define DWT_CTRL        (*(volatile uint32_t *)0xE0001000u)
#define DWT_CYCCNT      (*(volatile uint32_t *)0xE0001004u)
#define DWT_LAR         (*(volatile uint32_t *)0xE0001FB0u)   /* Cortex-M7: software lock */
#define DWT_CTRL_CYCCNTENA 0x1u

void SysTick_Handler(void);
void SysTick_Handler(void)
{
}

void tabula_ticks_init(void)
{
    DEMCR |= DEMCR_TRCENA;
    DWT_LAR = 0xC5ACCE55u;             /* unlock where the lock exists; ignored elsewhere */
    DWT_CYCCNT = 0u;
    DWT_CTRL |= DWT_CTRL_CYCCNTENA;
}

uint32_t tabula_board_ticks(void)
{
    return DWT_CYCCNT;
}
