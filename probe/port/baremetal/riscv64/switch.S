/*
 * port_switch(void **save, void *next_sp) for port_baremetal.c, with
 * interrupts masked. It saves what a C caller expects kept (ra, s0..s11,
 * fs0..fs11; the trap entry already saved the temporaries of an
 * interrupted task) and the return state of a trap (sepc, sstatus): a
 * switch made at an interrupt's exit must not lose them to the next task's
 * traps.
 */
#define FRAME 224

    .section .text.port_switch, "ax"
    .global port_switch
port_switch:
    addi    sp, sp, -FRAME
    sd      ra, 0(sp)
    sd      s0, 8(sp)
    sd      s1, 16(sp)
    sd      s2, 24(sp)
    sd      s3, 32(sp)
    sd      s4, 40(sp)
    sd      s5, 48(sp)
    sd      s6, 56(sp)
    sd      s7, 64(sp)
    sd      s8, 72(sp)
    sd      s9, 80(sp)
    sd      s10, 88(sp)
    sd      s11, 96(sp)
    fsd     fs0, 104(sp)
    fsd     fs1, 112(sp)
    fsd     fs2, 120(sp)
    fsd     fs3, 128(sp)
    fsd     fs4, 136(sp)
    fsd     fs5, 144(sp)
    fsd     fs6, 152(sp)
    fsd     fs7, 160(sp)
    fsd     fs8, 168(sp)
    fsd     fs9, 176(sp)
    fsd     fs10, 184(sp)
    fsd     fs11, 192(sp)
    csrr    t0, sepc
    sd      t0, 200(sp)
    csrr    t0, sstatus
    sd      t0, 208(sp)
    sd      sp, 0(a0)
    mv      sp, a1
    ld      t0, 208(sp)
    csrw    sstatus, t0
    ld      t0, 200(sp)
    csrw    sepc, t0
    fld     fs0, 104(sp)
    fld     fs1, 112(sp)
    fld     fs2, 120(sp)
    fld     fs3, 128(sp)
    fld     fs4, 136(sp)
    fld     fs5, 144(sp)
    fld     fs6, 152(sp)
    fld     fs7, 160(sp)
    fld     fs8, 168(sp)
    fld     fs9, 176(sp)
    fld     fs10, 184(sp)
    fld     fs11, 192(sp)
    ld      ra, 0(sp)
    ld      s0, 8(sp)
    ld      s1, 16(sp)
    ld      s2, 24(sp)
    ld      s3, 32(sp)
    ld      s4, 40(sp)
    ld      s5, 48(sp)
    ld      s6, 56(sp)
    ld      s7, 64(sp)
    ld      s8, 72(sp)
    ld      s9, 80(sp)
    ld      s10, 88(sp)
    ld      s11, 96(sp)
    addi    sp, sp, FRAME
    ret

/* A new task's first switch returns here with the task in s1. */
    .global port_task_start
port_task_start:
    mv      a0, s1
    call    port_task_main
1:  j       1b
