/*
 * Entry of the bare-metal image on riscv64, in S-mode where SBI firmware
 * (OpenSBI on QEMU's `virt`) jumps with the hart's id in a0 and the device
 * tree's address in a1: a stack, zeroed BSS, the FPU on (the histogram's sum
 * of squares is a double), the trap vector in place, then boot.c reads the
 * device tree before main.
 */
    .section .text.boot, "ax"
    .global _start
_start:
    .option push
    .option norelax
    la      gp, __global_pointer$
    .option pop
    mv      s0, a0
    mv      s1, a1
    csrw    sie, zero
    csrci   sstatus, 2                  /* SIE: interrupts masked until the image unmasks them */
    la      sp, __stack_top
    la      t0, __bss_start
    la      t1, __bss_end
1:  bgeu    t0, t1, 2f
    sd      zero, 0(t0)
    sd      zero, 8(t0)
    addi    t0, t0, 16
    j       1b
2:  li      t0, (1 << 13)               /* sstatus.FS = Initial: FP instructions allowed */
    csrs    sstatus, t0
    fscsr   zero
    la      t0, trap_entry
    csrw    stvec, t0                   /* direct mode: every trap at trap_entry */
    mv      a0, s0
    mv      a1, s1
    call    arch_boot
    call    main
3:  wfi
    j       3b
