/*
 * The S-mode trap entry. The counter is read before anything else is done
 * (one register saved to make room for it), so a timer latency includes no
 * dispatch of the image's own; then everything a C function may clobber is
 * saved (the FP temporaries too: GCC cannot keep a riscv64 function off the
 * FP registers) and trap_handle(now, scause, sepc, stval) is called.
 */
#define FRAME 304

    .section .text.trap, "ax"
    .balign 4
    .global trap_entry
trap_entry:
    addi    sp, sp, -FRAME
    sd      a0, 0(sp)
    rdtime  a0
    sd      a1, 8(sp)
    sd      a2, 16(sp)
    sd      a3, 24(sp)
    sd      a4, 32(sp)
    sd      a5, 40(sp)
    sd      a6, 48(sp)
    sd      a7, 56(sp)
    sd      t0, 64(sp)
    sd      t1, 72(sp)
    sd      t2, 80(sp)
    sd      t3, 88(sp)
    sd      t4, 96(sp)
    sd      t5, 104(sp)
    sd      t6, 112(sp)
    sd      ra, 120(sp)
    fsd     ft0, 128(sp)
    fsd     ft1, 136(sp)
    fsd     ft2, 144(sp)
    fsd     ft3, 152(sp)
    fsd     ft4, 160(sp)
    fsd     ft5, 168(sp)
    fsd     ft6, 176(sp)
    fsd     ft7, 184(sp)
    fsd     ft8, 192(sp)
    fsd     ft9, 200(sp)
    fsd     ft10, 208(sp)
    fsd     ft11, 216(sp)
    fsd     fa0, 224(sp)
    fsd     fa1, 232(sp)
    fsd     fa2, 240(sp)
    fsd     fa3, 248(sp)
    fsd     fa4, 256(sp)
    fsd     fa5, 264(sp)
    fsd     fa6, 272(sp)
    fsd     fa7, 280(sp)
    frcsr   t0
    sd      t0, 288(sp)
    csrr    a1, scause
    csrr    a2, sepc
    csrr    a3, stval
    call    trap_handle
    ld      t0, 288(sp)
    fscsr   t0
    fld     ft0, 128(sp)
    fld     ft1, 136(sp)
    fld     ft2, 144(sp)
    fld     ft3, 152(sp)
    fld     ft4, 160(sp)
    fld     ft5, 168(sp)
    fld     ft6, 176(sp)
    fld     ft7, 184(sp)
    fld     ft8, 192(sp)
    fld     ft9, 200(sp)
    fld     ft10, 208(sp)
    fld     ft11, 216(sp)
    fld     fa0, 224(sp)
    fld     fa1, 232(sp)
    fld     fa2, 240(sp)
    fld     fa3, 248(sp)
    fld     fa4, 256(sp)
    fld     fa5, 264(sp)
    fld     fa6, 272(sp)
    fld     fa7, 280(sp)
    ld      a0, 0(sp)
    ld      a1, 8(sp)
    ld      a2, 16(sp)
    ld      a3, 24(sp)
    ld      a4, 32(sp)
    ld      a5, 40(sp)
    ld      a6, 48(sp)
    ld      a7, 56(sp)
    ld      t0, 64(sp)
    ld      t1, 72(sp)
    ld      t2, 80(sp)
    ld      t3, 88(sp)
    ld      t4, 96(sp)
    ld      t5, 104(sp)
    ld      t6, 112(sp)
    ld      ra, 120(sp)
    addi    sp, sp, FRAME
    sret
