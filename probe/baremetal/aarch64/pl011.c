/* The PL011 UART at BOARD_UART_BASE, with its FIFOs turned on. */
#include "arch.h"
#include "board.h"

#define UART_DR 0x000
#define UART_FR 0x018
#define UART_LCR_H 0x02c
#define LCR_H_FEN (1u << 4)   /* FIFOs on: without, one received byte waits at a time */
#define FR_RXFE (1u << 4)   /* receive FIFO empty */
#define FR_TXFF (1u << 5)   /* transmit FIFO full */

static inline volatile uint32_t *reg(unsigned off)
{
    return (volatile uint32_t *)(uintptr_t)(BOARD_UART_BASE + off);
}

void uart_init(void)
{
    *reg(UART_LCR_H) |= LCR_H_FEN;
}

void uart_write(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        while (*reg(UART_FR) & FR_TXFF)
            ;
        *reg(UART_DR) = (unsigned char)s[i];
    }
}

int uart_getc(void)
{
    if (*reg(UART_FR) & FR_RXFE)
        return -1;
    return (int)(*reg(UART_DR) & 0xff);
}
