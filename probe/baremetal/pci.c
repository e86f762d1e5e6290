/*
 * ECAM enumeration and BAR assignment (pci.h). Only what a device on the
 * host bridge's own buses needs: functions behind a PCI-to-PCI bridge are
 * not reached (QEMU's `virt` puts -device cards on bus 0). Each call lays
 * the windows out afresh from their bases, so enabling the same device
 * again gives it the same addresses.
 */
#include "pci.h"

#include <stdbool.h>
#include <stddef.h>

#include "board.h"

#define CFG_ID 0x00
#define CFG_COMMAND 0x04
#define CFG_HEADER_TYPE 0x0e
#define CFG_BAR0 0x10
#define CMD_MEMORY (1u << 1)
#define BAR_IO (1u << 0)
#define BAR_64 (2u << 1)
#define BAR_TYPE_MASK (3u << 1)
#define BAR_PREFETCH (1u << 3)

#if BOARD_HAS_PCI
static volatile uint32_t *cfg(unsigned bus, unsigned dev, unsigned fn, unsigned reg)
{
    uintptr_t a = (uintptr_t)BOARD_PCI_ECAM_BASE + ((uintptr_t)bus << 20 | dev << 15 | fn << 12 | reg);
    return (volatile uint32_t *)a;
}

static uint32_t cfg_read(unsigned bus, unsigned dev, unsigned fn, unsigned reg)
{
    return *cfg(bus, dev, fn, reg);
}

static void cfg_write(unsigned bus, unsigned dev, unsigned fn, unsigned reg, uint32_t v)
{
    *cfg(bus, dev, fn, reg) = v;
}

struct window {
    uint64_t next, end;
};

/* Sizes every memory BAR of the function (decoding off meanwhile, so the
 * all-ones probe decodes nothing) and places it, aligned to its size, in
 * its window. */
static int assign_bars(unsigned bus, unsigned dev, unsigned fn, struct window *mmio, struct window *pref, int want,
                       struct pci_bar *out)
{
    uint32_t cmd = cfg_read(bus, dev, fn, CFG_COMMAND);
    cfg_write(bus, dev, fn, CFG_COMMAND, cmd & ~CMD_MEMORY & 0xffffu);
    int found = -1;
    for (int i = 0; i < 6; i++) {
        unsigned reg = CFG_BAR0 + 4u * (unsigned)i;
        uint32_t orig = cfg_read(bus, dev, fn, reg);
        if (orig & BAR_IO)
            continue;
        bool wide = (orig & BAR_TYPE_MASK) == BAR_64 && i < 5;
        cfg_write(bus, dev, fn, reg, 0xffffffffu);
        uint64_t mask = cfg_read(bus, dev, fn, reg) & ~0xfu;
        if (wide) {
            cfg_write(bus, dev, fn, reg + 4, 0xffffffffu);
            mask |= (uint64_t)cfg_read(bus, dev, fn, reg + 4) << 32;
        } else if (mask) {
            mask |= 0xffffffff00000000ull;
        }
        if (!mask) {                 /* not implemented */
            i += wide;
            continue;
        }
        uint64_t size = ~mask + 1;
        struct window *w = (orig & BAR_PREFETCH) ? pref : mmio;
        uint64_t base = (w->next + size - 1) & ~(size - 1);
        if (base + size > w->end || base + size < base)
            return -1;
        w->next = base + size;
        cfg_write(bus, dev, fn, reg, (uint32_t)base | (orig & 0xfu));
        if (wide)
            cfg_write(bus, dev, fn, reg + 4, (uint32_t)(base >> 32));
        if (i == want)
            found = 0, *out = (struct pci_bar){.base = (uintptr_t)base, .size = size, .bus = bus, .dev = dev, .fn = fn};
        i += wide;
    }
    cfg_write(bus, dev, fn, CFG_COMMAND, (cmd | CMD_MEMORY) & 0xffffu);
    return found;
}
#endif

int pci_enable_bar(uint16_t vendor, uint16_t device, int bar, struct pci_bar *out, const char **why)
{
#if !BOARD_HAS_PCI
    (void)vendor, (void)device, (void)bar, (void)out;
    *why = "the board has no PCI host bridge (its board file gives no pci_* keys)";
    return -1;
#else
    struct window mmio = {BOARD_PCI_MMIO_BASE, (uint64_t)BOARD_PCI_MMIO_BASE + BOARD_PCI_MMIO_SIZE};
    struct window pref = {BOARD_PCI_PREF_BASE, (uint64_t)BOARD_PCI_PREF_BASE + BOARD_PCI_PREF_SIZE};
    unsigned buses = (unsigned)((uint64_t)BOARD_PCI_ECAM_SIZE >> 20);
    uint32_t want = (uint32_t)device << 16 | vendor;
    for (unsigned bus = 0; bus < buses; bus++)
        for (unsigned dev = 0; dev < 32; dev++) {
            unsigned fns = cfg_read(bus, dev, 0, CFG_HEADER_TYPE & ~3u) >> 16 & 0x80 ? 8 : 1;
            for (unsigned fn = 0; fn < fns; fn++) {
                uint32_t id = cfg_read(bus, dev, fn, CFG_ID);
                if ((id & 0xffff) == 0xffff || id != want)
                    continue;
                if (assign_bars(bus, dev, fn, &mmio, &pref, bar, out)) {
                    *why = "its BARs do not fit the host bridge's windows (BOARD_PCI_MMIO_SIZE, BOARD_PCI_PREF_SIZE)";
                    return -1;
                }
                return 0;
            }
        }
    *why = "no such PCI device on the host bridge (BOARD_PCI_ECAM_BASE)";
    return -1;
#endif
}
