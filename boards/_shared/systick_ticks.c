/*
 * Ticks from SysTick on the processor clock (Armv7-M / Armv8-M ARM, B3.3 / B11.2): a 24-bit
 * down-counter; its interrupt counts wraps, so tabula_board_ticks() is a 32-bit free-running
 * count at the core clock (TABULA_BOARD_TICK_HZ, from board.toml's tick_hz).
 */
#include <stdint.h>

#include "tabula_board.h"
#include "tabula_board_parts.h"

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

void tabula_ticks_init(void)
{
    SYST_CSR = 0u;
    SYST_RVR = SYST_RELOAD;
    SYST_CVR = 0u;                     /* any write clears; counting starts from the reload */
    SYST_CSR = SYST_CSR_CLKSOURCE | SYST_CSR_TICKINT | SYST_CSR_ENABLE;
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
