/*
 * STM32H7 USART, polled, register level (RM0433 rev 8, section 48): the link on the Nucleo's
 * ST-LINK virtual COM port, USART3 on PD8 (TX) / PD9 (RX), alternate function 7.
 *
 * After reset the core, AHB and APB1 run from HSI at 64 MHz and USART3's kernel clock is
 * rcc_pclk1 (RCC_D2CCIP2R.USART234578SEL = 0), so BRR = 64 MHz / 115200 (oversampling by 16).
 */
#include <stdint.h>

#include "tabula_board.h"
#include "tabula_board_parts.h"

#define REG(addr) (*(volatile uint32_t *)(addr))

/* RCC (RM0433 8.7): AHB4 peripheral clocks (GPIOs), APB1L peripheral clocks (USART3). */
#define RCC_BASE          0x58024400u
#define RCC_AHB4ENR       REG(RCC_BASE + 0x0E0u)
#define RCC_APB1LENR      REG(RCC_BASE + 0x0E8u)
#define RCC_AHB4ENR_GPIODEN   (1u << 3)
#define RCC_APB1LENR_USART3EN (1u << 18)

/* GPIOD (RM0433 11.4): mode, speed, alternate function high register (pins 8..15). */
#define GPIOD_BASE        0x58020C00u
#define GPIOD_MODER       REG(GPIOD_BASE + 0x00u)
#define GPIOD_OSPEEDR     REG(GPIOD_BASE + 0x08u)
#define GPIOD_AFRH        REG(GPIOD_BASE + 0x24u)
#define GPIO_MODE_AF      0x2u
#define USART3_AF         7u

/* USART (RM0433 48.8). */
#define USART_CR1         REG(TABULA_UART_BASE + 0x00u)
#define USART_BRR         REG(TABULA_UART_BASE + 0x0Cu)
#define USART_ISR         REG(TABULA_UART_BASE + 0x1Cu)
#define USART_ICR         REG(TABULA_UART_BASE + 0x20u)
#define USART_RDR         REG(TABULA_UART_BASE + 0x24u)
#define USART_TDR         REG(TABULA_UART_BASE + 0x28u)
#define USART_CR1_UE      (1u << 0)
#define USART_CR1_RE      (1u << 2)
#define USART_CR1_TE      (1u << 3)
#define USART_ISR_ORE     (1u << 3)
#define USART_ISR_RXNE    (1u << 5)    /* RXFNE with the FIFO off */
#define USART_ISR_TC      (1u << 6)
#define USART_ISR_TXE     (1u << 7)    /* TXFNF with the FIFO off */
#define USART_ICR_ORECF   (1u << 3)
#define USART_ICR_FECF    (1u << 1)
#define USART_ICR_NECF    (1u << 2)

void tabula_board_init(void)
{
    RCC_AHB4ENR |= RCC_AHB4ENR_GPIODEN;
    RCC_APB1LENR |= RCC_APB1LENR_USART3EN;
    (void)RCC_APB1LENR;                         /* read back: the clock is on before we touch */

    /* PD8, PD9: alternate function 7, high speed. */
    GPIOD_MODER = (GPIOD_MODER & ~(0xFu << 16)) | (GPIO_MODE_AF << 16) | (GPIO_MODE_AF << 18);
    GPIOD_OSPEEDR |= (0xFu << 16);
    GPIOD_AFRH = (GPIOD_AFRH & ~0xFFu) | (USART3_AF << 0) | (USART3_AF << 4);

    USART_CR1 = 0u;
    USART_BRR = (TABULA_UART_CLOCK_HZ + TABULA_UART_BAUD / 2u) / TABULA_UART_BAUD;
    USART_CR1 = USART_CR1_UE | USART_CR1_TE | USART_CR1_RE;   /* 8N1, oversampling 16 */

    tabula_ticks_init();
}

void tabula_board_putc(uint8_t c)
{
    while (!(USART_ISR & USART_ISR_TXE)) {
    }
    USART_TDR = c;
}

int tabula_board_getc(void)
{
    for (;;) {
        uint32_t isr = USART_ISR;
        if (isr & USART_ISR_RXNE) {
            return (int)(USART_RDR & 0xFFu);
        }
        if (isr & USART_ISR_ORE) {
            /* A byte was lost: clear and go on; the frame's CRC fails and the host resends. */
            USART_ICR = USART_ICR_ORECF | USART_ICR_FECF | USART_ICR_NECF;
        }
    }
}

void tabula_uart_drain(void)
{
    while (!(USART_ISR & USART_ISR_TC)) {
    }
}
