/*
 * The MMU on, with an identity map, so that RAM is normal write-back
 * cacheable memory: with the MMU off every access is Device memory,
 * uncached, and a memory latency or bandwidth would measure nothing but
 * that. One level-1 table of 1 GiB blocks covers the 39-bit address space:
 * the blocks over BOARD_RAM_BASE .. + BOARD_RAM_SIZE are normal memory,
 * every other block Device-nGnRnE and never executable (the GIC, the UART).
 * The 1 GiB block that holds the PCI window for prefetchable BARs
 * (BOARD_PCI_PREF_*) is split into 2 MiB blocks by a level-2 table: the
 * window is normal cacheable memory, the rest of the block Device. The
 * prefetchable BAR the image uses is ivshmem's shared memory, RAM on the
 * host that QEMU and the host's processes map cacheable: a cacheable map
 * here stays coherent with theirs (KVM's stage 2 maps it cacheable too,
 * and a Device map would bypass the caches their writes sit in), and
 * normal memory takes the acquire/release instructions and the unaligned
 * copies the ipc transport uses.
 *
 * Runs from start.S with the MMU still off, before any other C code.
 */
#include <stdint.h>

#include "board.h"

#define BLOCK_SHIFT 30
#define ENTRIES 512

#define DESC_BLOCK 1ull
#define DESC_ATTR(i) ((uint64_t)(i) << 2)
#define DESC_SH_INNER (3ull << 8)
#define DESC_AF (1ull << 10)
#define DESC_PXN (1ull << 53)
#define DESC_UXN (1ull << 54)

#define ATTR_DEVICE 0   /* MAIR attribute 0: Device-nGnRnE */
#define ATTR_NORMAL 1   /* MAIR attribute 1: normal, inner and outer write-back, read and write allocate */
#define MAIR_VALUE (0x00ull << (8 * ATTR_DEVICE) | 0xffull << (8 * ATTR_NORMAL))

/* T0SZ 25 (39-bit addresses, the walk starts at level 1), walks of TTBR0
 * cached write-back and inner shareable, 4 KiB granule, TTBR1 walks off,
 * 40-bit physical addresses. */
#define TCR_VALUE (25ull | 1ull << 8 | 1ull << 10 | 3ull << 12 | 0ull << 14 | 1ull << 23 | 2ull << 32)

#define SCTLR_M (1ull << 0)
#define SCTLR_C (1ull << 2)
#define SCTLR_I (1ull << 12)

#define L2_SHIFT 21
#define DESC_TABLE 3ull

#if BOARD_HAS_PCI
_Static_assert(BOARD_PCI_PREF_BASE % (1ull << L2_SHIFT) == 0 && BOARD_PCI_PREF_SIZE % (1ull << L2_SHIFT) == 0 &&
               BOARD_PCI_PREF_BASE >> BLOCK_SHIFT == (BOARD_PCI_PREF_BASE + BOARD_PCI_PREF_SIZE - 1) >> BLOCK_SHIFT,
               "the prefetchable PCI window must be 2 MiB aligned and within one 1 GiB block");
#endif

static uint64_t level1[ENTRIES] __attribute__((aligned(4096)));
#if BOARD_HAS_PCI
static uint64_t pref_level2[ENTRIES] __attribute__((aligned(4096)));
#endif

static uint64_t block_desc(uint64_t base, int normal)
{
    base |= DESC_BLOCK | DESC_AF;
    return normal ? base | DESC_ATTR(ATTR_NORMAL) | DESC_SH_INNER : base | DESC_ATTR(ATTR_DEVICE) | DESC_PXN | DESC_UXN;
}

static void clean_table(const uint64_t *t)
{
    for (uintptr_t p = (uintptr_t)t; p < (uintptr_t)(t + ENTRIES); p += 64)
        __asm__ volatile("dc civac, %0" ::"r"(p) : "memory");
}

static int is_ram(uint64_t block)
{
    uint64_t first = (uint64_t)BOARD_RAM_BASE >> BLOCK_SHIFT;
    uint64_t last = ((uint64_t)BOARD_RAM_BASE + BOARD_RAM_SIZE - 1) >> BLOCK_SHIFT;
    return block >= first && block <= last;
}

void mmu_on(void);   /* called by start.S */
void mmu_on(void)
{
    for (uint64_t i = 0; i < ENTRIES; i++)
        level1[i] = block_desc(i << BLOCK_SHIFT, is_ram(i));
#if BOARD_HAS_PCI
    uint64_t pref_block = (uint64_t)BOARD_PCI_PREF_BASE >> BLOCK_SHIFT;
    uint64_t pref_first = BOARD_PCI_PREF_BASE, pref_end = pref_first + BOARD_PCI_PREF_SIZE;
    for (uint64_t i = 0; i < ENTRIES; i++) {
        uint64_t a = pref_block << BLOCK_SHIFT | i << L2_SHIFT;
        pref_level2[i] = block_desc(a, is_ram(pref_block) || (a >= pref_first && a < pref_end));
    }
    level1[pref_block] = (uint64_t)(uintptr_t)pref_level2 | DESC_TABLE;
    clean_table(pref_level2);
#endif
    /* The tables were written uncached; a walk through the caches must not
     * find stale lines of them. */
    clean_table(level1);
    uint64_t sctlr;
    __asm__ volatile("dsb sy\n\t"
                     "msr mair_el1, %1\n\t"
                     "msr tcr_el1, %2\n\t"
                     "msr ttbr0_el1, %3\n\t"
                     "isb\n\t"
                     "tlbi vmalle1\n\t"
                     "dsb nsh\n\t"
                     "ic iallu\n\t"
                     "dsb nsh\n\t"
                     "isb\n\t"
                     "mrs %0, sctlr_el1"
                     : "=r"(sctlr)
                     : "r"(MAIR_VALUE), "r"(TCR_VALUE), "r"((uint64_t)(uintptr_t)level1)
                     : "memory");
    sctlr |= SCTLR_M | SCTLR_C | SCTLR_I;
    __asm__ volatile("msr sctlr_el1, %0\n\tisb" ::"r"(sctlr) : "memory");
}
