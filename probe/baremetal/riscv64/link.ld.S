/* Preprocessed with board.h: the image is linked where the firmware jumps. */
#include "board.h"

OUTPUT_ARCH(riscv)
ENTRY(_start)

SECTIONS
{
    . = BOARD_LOAD_ADDR;
    __image_start = .;
    .text : {
        KEEP(*(.text.boot))
        *(.text .text.*)
    }
    .rodata : { *(.rodata .rodata.* .srodata .srodata.*) KEEP(*(.rtvb_board_note)) }
    .data : {
        *(.data .data.*)
        __global_pointer$ = . + 0x800;
        *(.sdata .sdata.*)
    }
    . = ALIGN(16);
    __bss_start = .;
    .bss (NOLOAD) : { *(.sbss .sbss.* .bss .bss.* COMMON) }
    . = ALIGN(16);
    __bss_end = .;
    . = . + 0x10000;
    __stack_top = .;
    /* Not zeroed at boot: mem-lat and mem-bw write it before they read it. */
    .memarea (NOLOAD) : ALIGN(4096) { *(.memarea) }
    __image_end = .;
    /DISCARD/ : { *(.comment) *(.note .note.*) *(.eh_frame) *(.riscv.attributes) }
}
