/*
 * The PL011 UART at BOARD_UART_BASE: the image's only channel to the host.
 * Polled both ways; QEMU's and firmware's set-up of the line (baud rate,
 * 8N1) is kept as found, with the FIFOs turned on.
 */
#ifndef RTVB_BM_PL011_H
#define RTVB_BM_PL011_H

#include <stddef.h>

void uart_init(void);
void uart_write(const char *s, size_t n);
void uart_puts(const char *s);
/* The next received byte, or -1 when none is waiting. */
int uart_getc(void);

#endif
