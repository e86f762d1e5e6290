/* Preprocessed with board.h: the image is linked where the board loads it. */
#include "board.h"

ENTRY(_start)

SECTIONS
{
    . = BOARD_LOAD_ADDR;
    __image_start = .;
    .text : {
        KEEP(*(.text.boot))
        *(.text .text.*)
    }
    .rodata : { *(.rodata .rodata.*) KEEP(*(.rtvb_board_note)) }
    .data : { *(.data .data.*) }
    . = ALIGN(16);
    __bss_start = .;
    .bss (NOLOAD) : { *(.bss .bss.* COMMON) }
    . = ALIGN(16);
    __bss_end = .;
    . = . + 0x10000;
    __stack_top = .;
    /* Not zeroed at boot: mem-lat and mem-bw write it before they read it. */
    .memarea (NOLOAD) : ALIGN(4096) { *(.memarea) }
    __image_end = .;
    __image_size = __image_end - __image_start;
    /DISCARD/ : { *(.comment) *(.note .note.*) *(.eh_frame) }
}
