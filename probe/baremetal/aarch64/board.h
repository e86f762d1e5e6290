/*
 * What the bare-metal image must know of the machine it runs on, in one
 * place: QEMU's `virt` machine by default (with -machine gic-version=2).
 * A board description (a TOML file, scripts/baremetal_board.py) sets these
 * in the board_config.h the build includes first; nothing else in the
 * image names an address or an interrupt number.
 *
 *   BOARD_NAME        a name for the records ("qemu-virt")
 *   BOARD_RAM_BASE    start of RAM                          0x40000000
 *   BOARD_RAM_SIZE    bytes of RAM (QEMU's -m up to 1G)     0x40000000
 *                     the 1 GiB blocks over them are mapped cacheable (mmu.c)
 *   BOARD_LOAD_ADDR   where the image is linked and loaded  0x40080000
 *                     (RAM + 0x80000, where QEMU puts an arm64 Image)
 *   BOARD_UART_BASE   PL011 UART                            0x09000000
 *   BOARD_GIC_VERSION 2 or 3                                2
 *   BOARD_GICD_BASE   GIC distributor                       0x08000000
 *   BOARD_GICC_BASE   GICv2 CPU interface                   0x08010000
 *   BOARD_GICR_BASE   GICv3 first redistributor             0x080a0000
 *   BOARD_TIMER_IRQ   the EL1 virtual timer's PPI (INTID)   27
 *   BOARD_COUNTER_HZ  the counter's frequency when CNTFRQ_EL0  0 (none)
 *                     reads 0 (firmware that never set it)
 *   BOARD_MEM_AREA_BYTES  the static region mem-lat and   0x6000000
 *                     mem-bw measure in (96 MiB)
 *   BOARD_HAS_PCI     0 where the board has no PCI host    1
 *                     bridge: ipc then finds no device
 *   BOARD_PCI_ECAM_BASE, _SIZE  the host bridge's ECAM    0x4010000000, 0x10000000
 *   BOARD_PCI_MMIO_BASE, _SIZE  where the image puts       0x10000000, 0x10000000
 *                     non-prefetchable BARs (device memory)
 *   BOARD_PCI_PREF_BASE, _SIZE  where it puts prefetchable 0x20000000, 0x10000000
 *                     BARs (ivshmem's shared memory), mapped normal
 *                     cacheable (mmu.c); 2 MiB aligned, in one 1 GiB block
 *                     both inside virt's 32-bit PCI window 0x10000000..0x3efeffff
 *
 * The linker script includes this file too, so it holds macros only.
 */
#ifndef RTVB_BOARD_H
#define RTVB_BOARD_H

#ifndef BOARD_NAME
#define BOARD_NAME "qemu-virt"
#endif
#ifndef BOARD_RAM_BASE
#define BOARD_RAM_BASE 0x40000000
#endif
#ifndef BOARD_RAM_SIZE
#define BOARD_RAM_SIZE 0x40000000
#endif
#ifndef BOARD_LOAD_ADDR
#define BOARD_LOAD_ADDR 0x40080000
#endif
#ifndef BOARD_UART_BASE
#define BOARD_UART_BASE 0x09000000
#endif
#ifndef BOARD_GIC_VERSION
#define BOARD_GIC_VERSION 2
#endif
#ifndef BOARD_GICD_BASE
#define BOARD_GICD_BASE 0x08000000
#endif
#ifndef BOARD_GICC_BASE
#define BOARD_GICC_BASE 0x08010000
#endif
#ifndef BOARD_GICR_BASE
#define BOARD_GICR_BASE 0x080a0000
#endif
#ifndef BOARD_TIMER_IRQ
#define BOARD_TIMER_IRQ 27
#endif
#ifndef BOARD_COUNTER_HZ
#define BOARD_COUNTER_HZ 0
#endif

#ifndef BOARD_MEM_AREA_BYTES
#define BOARD_MEM_AREA_BYTES 0x6000000
#endif

#ifndef BOARD_HAS_PCI
#define BOARD_HAS_PCI 1
#endif
#ifndef BOARD_PCI_ECAM_BASE
#define BOARD_PCI_ECAM_BASE 0x4010000000
#endif
#ifndef BOARD_PCI_ECAM_SIZE
#define BOARD_PCI_ECAM_SIZE 0x10000000
#endif
#ifndef BOARD_PCI_MMIO_BASE
#define BOARD_PCI_MMIO_BASE 0x10000000
#endif
#ifndef BOARD_PCI_MMIO_SIZE
#define BOARD_PCI_MMIO_SIZE 0x10000000
#endif
#ifndef BOARD_PCI_PREF_BASE
#define BOARD_PCI_PREF_BASE 0x20000000
#endif
#ifndef BOARD_PCI_PREF_SIZE
#define BOARD_PCI_PREF_SIZE 0x10000000
#endif

#endif
