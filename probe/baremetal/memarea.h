/*
 * The static region the image's memory commands measure in: RAM past the
 * stack (its own linker section, not zeroed at boot), BOARD_MEM_AREA_BYTES
 * long, page-aligned; cacheable RAM on both architectures (aarch64's MMU
 * maps it so, riscv64's S-mode without translation has it so).
 */
#ifndef RTVB_BM_MEMAREA_H
#define RTVB_BM_MEMAREA_H

#include <stdint.h>

#include "board.h"

extern char mem_area[BOARD_MEM_AREA_BYTES];

struct jw;

/* A memory command's --sizes list: the count, or -1 after its err line
 * (rtvb-probe <sub>: bad --sizes ...; give ... such as <example>). */
int mem_sizes(const char *sub, const char *list, const char *example, uint64_t *sizes, int max);
/* Opens the meta record's `params` with `sizes_bytes` and the area's size. */
void mem_params_begin(struct jw *w, const uint64_t *sizes, int n);

/* The median of n samples (n <= MEM_SAMPLES_MAX); sorts v in place. */
#define MEM_SAMPLES_MAX 100
uint64_t median_u64(uint64_t *v, int n);

#endif
