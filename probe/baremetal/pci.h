/*
 * PCI on a board whose firmware assigns nothing (QEMU's `virt` entered
 * with -kernel): the image walks the ECAM itself, gives a device's memory
 * BARs addresses in the host bridge's windows (board.h: prefetchable BARs
 * in BOARD_PCI_PREF_*, which aarch64's MMU maps as normal memory, the
 * others in BOARD_PCI_MMIO_*, device memory) and turns its memory decoding
 * on.
 */
#ifndef RTVB_BM_PCI_H
#define RTVB_BM_PCI_H

#include <stdint.h>

struct pci_bar {
    uintptr_t base;
    uint64_t size;
    unsigned bus, dev, fn;           /* where the device was found */
};

/* The first function with this vendor and device id: its BARs assigned and
 * decoding on, BAR `bar` in *out. 0; -1 with *why when there is none, or
 * its BARs do not fit the windows. */
int pci_enable_bar(uint16_t vendor, uint16_t device, int bar, struct pci_bar *out, const char **why);

#endif
