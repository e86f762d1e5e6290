/*
 * What the host must know of the image before it boots it, in the image
 * file itself: a campaign may name an image built from any board file, and
 * validate holds mem-lat's and mem-bw's sizes to its memory area and a
 * shared region to its prefetchable PCI window
 * (rtvbench/targets/qemu/image.py reads this line from the .elf or .bin).
 * The linker scripts keep its section, which nothing in the image reads.
 */
#include "board.h"

#define NOTE_STR(x) #x
#define NOTE_VALUE(x) NOTE_STR(x)

#if BOARD_HAS_PCI
#define NOTE_PCI_PREF NOTE_VALUE(BOARD_PCI_PREF_SIZE)
#else
#define NOTE_PCI_PREF "0"
#endif

__attribute__((used, section(".rtvb_board_note"))) const char rtvb_board_note[] =
    "rtvb-board-note mem_area_bytes=" NOTE_VALUE(BOARD_MEM_AREA_BYTES) " pci_pref_bytes=" NOTE_PCI_PREF "\n";
