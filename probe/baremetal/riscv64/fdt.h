/*
 * The one value the riscv64 image reads from the flattened device tree its
 * firmware hands over: /cpus' timebase-frequency (or, where a tree puts it
 * there, the first cpu node's), the `time` counter's frequency.
 */
#ifndef RTVB_BM_FDT_H
#define RTVB_BM_FDT_H

#include <stddef.h>
#include <stdint.h>

/* The frequency in Hz, or 0 when the blob is not a device tree, is cut
 * short or malformed anywhere it is read, or holds no such property. Reads
 * nothing beyond the blob's own totalsize, nor beyond max_size. */
uint64_t fdt_timebase_hz(const void *fdt, size_t max_size);

#endif
