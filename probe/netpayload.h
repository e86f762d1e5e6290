/*
 * The payload of `network`: what the sender writes into each tcp chunk or
 * udp datagram and how the receiver checks every byte of it.
 */
#ifndef RTVB_NETPAYLOAD_H
#define RTVB_NETPAYLOAD_H

#include <stddef.h>
#include <stdint.h>

/* The sequence number, little-endian, in the first bytes of each message. */
#define NETPAYLOAD_HDR 8

/* Message seq of `size` bytes (NETPAYLOAD_HDR at least) into out. */
void netpayload_fill(uint8_t *out, size_t size, uint64_t seq);

/* Whether message seq of `size` bytes in got is exact, in one pass that
 * neither writes nor keeps a copy of the expected message. */
int netpayload_exact(const uint8_t *got, size_t size, uint64_t seq);

/* The offset of the first byte of got that differs from message seq, with
 * the byte it should have been; size when none does. */
size_t netpayload_first_fault(const uint8_t *got, size_t size, uint64_t seq, unsigned *expected);

#endif
