/*
 * What the riscv64 image must know of the machine it runs on, in one place:
 * QEMU's `virt` machine with its default OpenSBI firmware by default. A
 * board description (a TOML file, scripts/baremetal_board.py) sets these in
 * the board_config.h the build includes first; nothing else in the image
 * names an address.
 *
 *   BOARD_NAME         a name for the records ("qemu-virt")
 *   BOARD_RAM_BASE     start of RAM                          0x80000000
 *   BOARD_LOAD_ADDR    where the image is linked and loaded  0x80200000
 *                      (the first 2 MiB past the firmware, where OpenSBI
 *                      jumps and QEMU puts a raw -kernel)
 *   BOARD_UART_BASE    NS16550A UART, byte-wide registers    0x10000000
 *   BOARD_TIMEBASE_HZ  the `time` counter's frequency when   10000000
 *                      the device tree does not give it
 *   BOARD_TIMER_PATH   how the timer is armed: 0 Sstc's       0
 *                      stimecmp if the device tree names sstc,
 *                      else SBI; 1 always Sstc; 2 always SBI
 *   BOARD_MEM_AREA_BYTES  the static region mem-lat and   0x6000000
 *                     mem-bw measure in (96 MiB)
 *   BOARD_HAS_PCI      0 where the board has no PCI host    1
 *                      bridge: ipc then finds no device
 *   BOARD_PCI_ECAM_BASE, _SIZE  the host bridge's ECAM    0x30000000, 0x10000000
 *   BOARD_PCI_MMIO_BASE, _SIZE  where the image puts       0x40000000, 0x10000000
 *                     non-prefetchable BARs
 *   BOARD_PCI_PREF_BASE, _SIZE  where it puts prefetchable 0x50000000, 0x10000000
 *                     BARs (ivshmem's shared memory); both inside virt's
 *                     32-bit PCI window 0x40000000..0x7fffffff
 *
 * The linker script includes this file too, so it holds macros only.
 */
#ifndef RTVB_BOARD_H
#define RTVB_BOARD_H

#ifndef BOARD_NAME
#define BOARD_NAME "qemu-virt"
#endif
#ifndef BOARD_RAM_BASE
#define BOARD_RAM_BASE 0x80000000
#endif
#ifndef BOARD_LOAD_ADDR
#define BOARD_LOAD_ADDR 0x80200000
#endif
#ifndef BOARD_UART_BASE
#define BOARD_UART_BASE 0x10000000
#endif
#ifndef BOARD_TIMEBASE_HZ
#define BOARD_TIMEBASE_HZ 10000000
#endif
#ifndef BOARD_TIMER_PATH
#define BOARD_TIMER_PATH 0
#endif
#define BOARD_TIMER_AUTO 0
#define BOARD_TIMER_SSTC 1
#define BOARD_TIMER_SBI 2

#ifndef BOARD_MEM_AREA_BYTES
#define BOARD_MEM_AREA_BYTES 0x6000000
#endif

#ifndef BOARD_HAS_PCI
#define BOARD_HAS_PCI 1
#endif
#ifndef BOARD_PCI_ECAM_BASE
#define BOARD_PCI_ECAM_BASE 0x30000000
#endif
#ifndef BOARD_PCI_ECAM_SIZE
#define BOARD_PCI_ECAM_SIZE 0x10000000
#endif
#ifndef BOARD_PCI_MMIO_BASE
#define BOARD_PCI_MMIO_BASE 0x40000000
#endif
#ifndef BOARD_PCI_MMIO_SIZE
#define BOARD_PCI_MMIO_SIZE 0x10000000
#endif
#ifndef BOARD_PCI_PREF_BASE
#define BOARD_PCI_PREF_BASE 0x50000000
#endif
#ifndef BOARD_PCI_PREF_SIZE
#define BOARD_PCI_PREF_SIZE 0x10000000
#endif

#endif
