/*
 * Entry of the bare-metal image on aarch64: an arm64 Image header (so QEMU
 * and boot loaders load the .bin where the .elf is linked), then EL1 with a
 * stack, zeroed BSS, FP/SIMD enabled, the MMU on with RAM cacheable, and
 * the exception vectors in place.
 *
 * QEMU's `virt` without virtualization=on enters at EL1; at EL2 (with
 * virtualization=on, or on a board whose firmware leaves EL2) the image
 * drops to EL1 with the counters and timers open to it, so it always runs
 * where a guest partition's code runs.
 */
#include "board.h"

    .section .text.boot, "ax"
    .global _start
_start:
    b       reset                       /* code0 */
    .long   0                           /* code1 */
    .quad   BOARD_LOAD_ADDR - BOARD_RAM_BASE   /* text_offset */
    .quad   __image_size                /* image_size: BSS and stack included (link.ld) */
    .quad   2                           /* flags: little-endian, 4 KiB pages */
    .quad   0, 0, 0
    .ascii  "ARM\x64"                   /* magic */
    .long   0

reset:
    mrs     x19, CurrentEL
    ubfx    x19, x19, #2, #2
    cmp     x19, #2
    b.ne    at_el1
    mov     x0, #(1 << 31)              /* HCR_EL2.RW: EL1 is AArch64 */
    msr     hcr_el2, x0
    mov     x0, #3                      /* CNTHCTL_EL2: EL1 reads the counters, uses the timers */
    msr     cnthctl_el2, x0
    msr     cntvoff_el2, xzr
#if BOARD_GIC_VERSION == 3
    mrs     x0, icc_sre_el2             /* GICv3: EL1 may use the ICC_* system registers (SRE, Enable) */
    orr     x0, x0, #(1 << 0)
    orr     x0, x0, #(1 << 3)
    msr     icc_sre_el2, x0
    isb
#endif
    mov     x0, #0x3c5                  /* EL1h, D, A, I and F masked */
    msr     spsr_el2, x0
    adr     x0, at_el1
    msr     elr_el2, x0
    eret

at_el1:
    mov     x0, #(3 << 20)              /* CPACR_EL1.FPEN: no trap on FP/SIMD */
    msr     cpacr_el1, x0
    isb
    ldr     x0, =__stack_top
    mov     sp, x0
    ldr     x0, =__bss_start
    ldr     x1, =__bss_end
1:  cmp     x0, x1
    b.hs    2f
    stp     xzr, xzr, [x0], #16
    b       1b
2:  bl      mmu_on                      /* RAM cacheable from here on (mmu.c) */
    ldr     x0, =vectors
    msr     vbar_el1, x0
    isb
    ldr     x0, =boot_el
    str     w19, [x0]
    bl      main
3:  wfi
    b       3b
