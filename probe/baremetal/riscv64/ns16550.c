/* The NS16550A UART at BOARD_UART_BASE (byte-wide registers), with its
 * FIFOs turned on and cleared. */
#include "arch.h"
#include "board.h"

#define UART_RBR 0   /* read */
#define UART_THR 0   /* write */
#define UART_FCR 2
#define UART_LSR 5
#define FCR_ENABLE_CLEAR 0x07u
#define LSR_DR (1u << 0)     /* a received byte is waiting */
#define LSR_THRE (1u << 5)   /* room to transmit */

static inline volatile uint8_t *reg(unsigned off)
{
    return (volatile uint8_t *)(uintptr_t)(BOARD_UART_BASE + off);
}

void uart_init(void)
{
    *reg(UART_FCR) = FCR_ENABLE_CLEAR;
}

void uart_write(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        while (!(*reg(UART_LSR) & LSR_THRE))
            ;
        *reg(UART_THR) = (uint8_t)s[i];
    }
}

int uart_getc(void)
{
    if (!(*reg(UART_LSR) & LSR_DR))
        return -1;
    return *reg(UART_RBR);
}
