/*
 * port_switch(void **save, void *next_sp) for port_baremetal.c, with
 * interrupts masked. It saves what a C caller expects kept (x19..x30), the
 * return state of an interrupt (ELR, SPSR: a switch made at an interrupt's
 * exit must not lose them to the next task's interrupts) and every FP/SIMD
 * register with FPCR and FPSR, since the interrupt entry saves none of
 * them and the interrupted task may be in the middle of FP code.
 */
#define FRAME 640

    .section .text.port_switch, "ax"
    .global port_switch
port_switch:
    sub     sp, sp, #FRAME
    stp     x19, x20, [sp, #0]
    stp     x21, x22, [sp, #16]
    stp     x23, x24, [sp, #32]
    stp     x25, x26, [sp, #48]
    stp     x27, x28, [sp, #64]
    stp     x29, x30, [sp, #80]
    mrs     x9, elr_el1
    mrs     x10, spsr_el1
    stp     x9, x10, [sp, #96]
    mrs     x9, fpcr
    mrs     x10, fpsr
    stp     x9, x10, [sp, #112]
    stp     q0, q1, [sp, #128]
    stp     q2, q3, [sp, #160]
    stp     q4, q5, [sp, #192]
    stp     q6, q7, [sp, #224]
    stp     q8, q9, [sp, #256]
    stp     q10, q11, [sp, #288]
    stp     q12, q13, [sp, #320]
    stp     q14, q15, [sp, #352]
    stp     q16, q17, [sp, #384]
    stp     q18, q19, [sp, #416]
    stp     q20, q21, [sp, #448]
    stp     q22, q23, [sp, #480]
    stp     q24, q25, [sp, #512]
    stp     q26, q27, [sp, #544]
    stp     q28, q29, [sp, #576]
    stp     q30, q31, [sp, #608]
    mov     x9, sp
    str     x9, [x0]
    mov     sp, x1
    ldp     q0, q1, [sp, #128]
    ldp     q2, q3, [sp, #160]
    ldp     q4, q5, [sp, #192]
    ldp     q6, q7, [sp, #224]
    ldp     q8, q9, [sp, #256]
    ldp     q10, q11, [sp, #288]
    ldp     q12, q13, [sp, #320]
    ldp     q14, q15, [sp, #352]
    ldp     q16, q17, [sp, #384]
    ldp     q18, q19, [sp, #416]
    ldp     q20, q21, [sp, #448]
    ldp     q22, q23, [sp, #480]
    ldp     q24, q25, [sp, #512]
    ldp     q26, q27, [sp, #544]
    ldp     q28, q29, [sp, #576]
    ldp     q30, q31, [sp, #608]
    ldp     x9, x10, [sp, #112]
    msr     fpcr, x9
    msr     fpsr, x10
    ldp     x9, x10, [sp, #96]
    msr     elr_el1, x9
    msr     spsr_el1, x10
    ldp     x19, x20, [sp, #0]
    ldp     x21, x22, [sp, #16]
    ldp     x23, x24, [sp, #32]
    ldp     x25, x26, [sp, #48]
    ldp     x27, x28, [sp, #64]
    ldp     x29, x30, [sp, #80]
    add     sp, sp, #FRAME
    ret

/* A new task's first switch returns here with the task in x19. */
    .global port_task_start
port_task_start:
    mov     x0, x19
    bl      port_task_main
1:  b       1b
