/*
 * What the riscv64 image reads from the flattened device tree its firmware
 * hands over: /cpus' timebase-frequency (or, where a tree puts it there,
 * the first cpu node's), the `time` counter's frequency; and whether its
 * hart's ISA names an extension (Sstc: the timer without the firmware).
 */
#ifndef RTVB_BM_FDT_H
#define RTVB_BM_FDT_H

#include <stddef.h>
#include <stdint.h>

/* The frequency in Hz, or 0 when the blob is not a device tree, is cut
 * short or malformed anywhere it is read, or holds no such property. Reads
 * nothing beyond the blob's own totalsize, nor beyond max_size. */
uint64_t fdt_timebase_hz(const void *fdt, size_t max_size);

/* 1 when the cpu node whose `reg` is the hart names the extension (lower
 * case, e.g. "sstc") in its riscv,isa string or riscv,isa-extensions list,
 * 0 when it does not, -1 when there is no such node or the blob is not a
 * well-formed device tree up to it. Reads within the same bounds. */
int fdt_hart_has_extension(const void *fdt, size_t max_size, uint64_t hart, const char *ext);

#endif
