/*
 * EL1 exception vectors. The only exception the image expects is an IRQ
 * taken from EL1 with SP_EL1 (the timer); it saves what the AAPCS lets a C
 * function clobber in the general registers and calls irq_handle, which
 * is built with -mgeneral-regs-only so the FP/SIMD registers need no saving.
 * Anything else is a bug of the image: exception_fatal reports it and stops.
 */
    .macro  unexpected kind
    .balign 0x80
    mov     x0, #\kind
    mrs     x1, esr_el1
    mrs     x2, elr_el1
    b       exception_fatal
    .endm

    .section .text.vectors, "ax"
    .balign 2048
    .global vectors
vectors:
    unexpected 0            /* current EL, SP_EL0: synchronous */
    unexpected 1            /* IRQ */
    unexpected 2            /* FIQ */
    unexpected 3            /* SError */
    unexpected 4            /* current EL, SP_ELx: synchronous */
    .balign 0x80
    b       irq_entry       /* IRQ */
    unexpected 6            /* FIQ */
    unexpected 7            /* SError */
    unexpected 8            /* lower EL, AArch64 */
    unexpected 9
    unexpected 10
    unexpected 11
    unexpected 12           /* lower EL, AArch32 */
    unexpected 13
    unexpected 14
    unexpected 15

irq_entry:
    sub     sp, sp, #176
    stp     x0, x1, [sp, #0]
    stp     x2, x3, [sp, #16]
    stp     x4, x5, [sp, #32]
    stp     x6, x7, [sp, #48]
    stp     x8, x9, [sp, #64]
    stp     x10, x11, [sp, #80]
    stp     x12, x13, [sp, #96]
    stp     x14, x15, [sp, #112]
    stp     x16, x17, [sp, #128]
    stp     x18, x29, [sp, #144]
    str     x30, [sp, #160]
    bl      irq_handle
    ldp     x0, x1, [sp, #0]
    ldp     x2, x3, [sp, #16]
    ldp     x4, x5, [sp, #32]
    ldp     x6, x7, [sp, #48]
    ldp     x8, x9, [sp, #64]
    ldp     x10, x11, [sp, #80]
    ldp     x12, x13, [sp, #96]
    ldp     x14, x15, [sp, #112]
    ldp     x16, x17, [sp, #128]
    ldp     x18, x29, [sp, #144]
    ldr     x30, [sp, #160]
    add     sp, sp, #176
    eret
