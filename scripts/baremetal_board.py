#!/usr/bin/env python3
"""A board description for the bare-metal image (docs/baremetal.md, "On a board"): a TOML file of documented
keys, checked and turned into the header of `#define`s the build puts before board.h, so board.h stays the one
place the image's C reads. Standard library only: `make baremetal` runs it before the venv's packages matter.

    baremetal_board.py BOARD.toml --arch          prints the board's architecture (make reads it)
    baremetal_board.py BOARD.toml -o board_config.h
    baremetal_board.py --keys-table                the docs' table of keys, from KEYS below

A bad file gets one sentence naming the file and the key, on stderr, and exit status 2."""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

ARCHES = ("aarch64", "riscv64")
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,47}")
ADDRESS_LIMIT = 1 << 48
IMAGE_ROOM = 2 << 20     # code, data, BSS and stack of the image beside its memory area, with room to spare


@dataclass(frozen=True)
class Key:
    name: str
    arches: tuple[str, ...]
    kind: str                # "name", "arch", "address", "size", "hz", "intid" or "choice"
    macro: str | None        # the board.h macro it sets; None where it picks code instead
    required: bool
    meaning: str
    qemu_virt: str           # what QEMU's `virt` boards say (docs)
    choices: tuple[str, ...] = ()


BOTH = ARCHES
A64 = ("aarch64",)
RV64 = ("riscv64",)

KEYS = (
    Key("name", BOTH, "name", "BOARD_NAME", True, "the `board` of the `meta` record: letters, digits, `.`, `_`, `-`",
        '`"qemu-virt"`'),
    Key("arch", BOTH, "arch", None, True, "the image's architecture", '`"aarch64"`, `"riscv64"`', ARCHES),
    Key("load_address", BOTH, "address", "BOARD_LOAD_ADDR", True,
        "where the image is linked and must be loaded (4 KiB aligned, inside RAM); the image is not relocatable",
        "`0x40080000`, `0x80200000`"),
    Key("ram_base", BOTH, "address", "BOARD_RAM_BASE", True, "start of the RAM the image may use",
        "`0x40000000`, `0x80000000`"),
    Key("ram_size", BOTH, "size", "BOARD_RAM_SIZE", True,
        "bytes of that RAM: on aarch64 the 1 GiB blocks over it are mapped cacheable; the image, its stack and "
        "memory area must fit it past the load address", "`0x40000000`"),
    Key("uart", BOTH, "choice", None, True, "the console UART's kind: `pl011` on aarch64, `ns16550` on riscv64",
        '`"pl011"`, `"ns16550"`', ("pl011", "ns16550")),
    Key("uart_base", BOTH, "address", "BOARD_UART_BASE", True, "the UART's registers", "`0x09000000`, `0x10000000`"),
    Key("gic", A64, "choice", "BOARD_GIC_VERSION", True,
        "the interrupt controller: `v2` (memory-mapped CPU interface) or `v3` (system-register CPU interface, "
        "a redistributor per CPU)", '`"v2"` (`gic-version=2`), `"v3"` (`gic-version=3`)', ("v2", "v3")),
    Key("gicd_base", A64, "address", "BOARD_GICD_BASE", True, "the GIC distributor", "`0x08000000`"),
    Key("gicc_base", A64, "address", "BOARD_GICC_BASE", False, "GICv2's CPU interface (with `gic = \"v2\"` only)",
        "`0x08010000`"),
    Key("gicr_base", A64, "address", "BOARD_GICR_BASE", False,
        "GICv3's first redistributor (with `gic = \"v3\"` only); the image finds its CPU's by its affinity",
        "`0x080a0000`"),
    Key("timer_irq", A64, "intid", "BOARD_TIMER_IRQ", True, "INTID of the EL1 virtual timer's PPI (16 .. 31)",
        "`27`"),
    Key("timer", RV64, "choice", "BOARD_TIMER_PATH", False,
        "how the timer is armed: `auto` (Sstc's `stimecmp` when the device tree's ISA string names `sstc`, "
        "else the SBI call), `sstc`, `sbi`; default `auto`", '`"auto"`', ("auto", "sstc", "sbi")),
    Key("counter_hz", BOTH, "hz", None, False,
        "the counter's frequency when the machine does not say it (aarch64: CNTFRQ_EL0 reads 0; riscv64: no "
        "`timebase-frequency` in the device tree)", "`10000000` (riscv64)"),
    Key("memory_area_bytes", BOTH, "size", "BOARD_MEM_AREA_BYTES", False,
        "the static area `mem-lat` and `mem-bw` measure in, past the stack; default 96 MiB", "`0x6000000`"),
    Key("pci_ecam_base", BOTH, "address", "BOARD_PCI_ECAM_BASE", False,
        "the PCI host bridge's ECAM (1 MiB aligned); the six `pci_` keys go together, and a board without "
        "them has no PCI: `ipc` then ends with an error record saying so", "`0x4010000000`, `0x30000000`"),
    Key("pci_ecam_size", BOTH, "size", "BOARD_PCI_ECAM_SIZE", False,
        "bytes of the ECAM: 1 MiB a bus, at most 256 buses", "`0x10000000`"),
    Key("pci_mmio_base", BOTH, "address", "BOARD_PCI_MMIO_BASE", False,
        "the window where the image places non-prefetchable BARs (ivshmem's registers), mapped as device "
        "memory; 4 KiB aligned, below 4 GiB (the image writes 32-bit BARs)", "`0x10000000`, `0x40000000`"),
    Key("pci_mmio_size", BOTH, "size", "BOARD_PCI_MMIO_SIZE", False, "bytes of that window (4 KiB multiple)",
        "`0x10000000`"),
    Key("pci_pref_base", BOTH, "address", "BOARD_PCI_PREF_BASE", False,
        "the window where it places prefetchable BARs (ivshmem's shared memory), below 4 GiB; on aarch64 mapped "
        "cacheable by a level-2 table of 2 MiB blocks: 2 MiB aligned and in one 1 GiB block", "`0x20000000`, "
        "`0x50000000`"),
    Key("pci_pref_size", BOTH, "size", "BOARD_PCI_PREF_SIZE", False,
        "bytes of that window (2 MiB multiple on aarch64, 4 KiB on riscv64): the largest ivshmem region the "
        "image maps", "`0x10000000`"),
)
PCI_KEYS = tuple(k.name for k in KEYS if k.name.startswith("pci_"))
#: the one address space the image reaches: aarch64's identity map covers 39 bits (512 1 GiB blocks)
MAPPED_LIMIT = {"aarch64": 1 << 39, "riscv64": ADDRESS_LIMIT}

COUNTER_HZ_MACRO = {"aarch64": "BOARD_COUNTER_HZ", "riscv64": "BOARD_TIMEBASE_HZ"}
UART_OF_ARCH = {"aarch64": "pl011", "riscv64": "ns16550"}
GIC_VERSION = {"v2": 2, "v3": 3}
TIMER_PATH = {"auto": 0, "sstc": 1, "sbi": 2}


class BoardError(Exception):
    """One sentence naming the file and the key."""


def _check_value(path: Path, key: Key, value: object) -> None:
    where = f"board file {path}: key '{key.name}'"
    if key.kind in ("name", "arch", "choice"):
        if not isinstance(value, str):
            raise BoardError(f"{where} must be a string; write it in double quotes.")
        if key.kind == "name" and not NAME_PATTERN.fullmatch(value):
            raise BoardError(f"{where} is {value!r}; give 1 to 48 letters, digits, '.', '_' or '-', starting with "
                             "a letter or digit.")
        if key.choices and value not in key.choices:
            raise BoardError(f"{where} is {value!r}; give one of: {', '.join(key.choices)}.")
        return
    if not isinstance(value, int) or isinstance(value, bool):
        raise BoardError(f"{where} must be an integer (TOML takes 0x... for hex), not {value!r}.")
    if key.kind == "address" and not 0 <= value < ADDRESS_LIMIT:
        raise BoardError(f"{where} is {value:#x}; give an address below 2^48.")
    if key.kind in ("size", "hz") and not 0 < value < ADDRESS_LIMIT:
        raise BoardError(f"{where} is {value}; give a positive number below 2^48.")
    if key.kind == "intid" and not 16 <= value <= 31:
        raise BoardError(f"{where} is {value}; a PPI's INTID is 16 .. 31 (the EL1 virtual timer is 27 on most "
                         "boards).")


def _check_board(path: Path, board: dict) -> None:
    """What single values cannot say: which keys go together, and whether the image fits."""
    arch = board["arch"]
    if board["uart"] != UART_OF_ARCH[arch]:
        raise BoardError(f"board file {path}: key 'uart' is {board['uart']!r}; the {arch} image drives "
                         f"{UART_OF_ARCH[arch]!r} only.")
    if arch == "aarch64":
        need, refused = ("gicc_base", "gicr_base") if board["gic"] == "v2" else ("gicr_base", "gicc_base")
        if need not in board:
            raise BoardError(f"board file {path}: key '{need}' is missing; gic = {board['gic']!r} needs it.")
        if refused in board:
            raise BoardError(f"board file {path}: key '{refused}' does not go with gic = {board['gic']!r}; "
                             "remove it.")
    load, base, size = board["load_address"], board["ram_base"], board["ram_size"]
    if load % 4096:
        raise BoardError(f"board file {path}: key 'load_address' is {load:#x}; give a 4 KiB aligned address.")
    area = board.get("memory_area_bytes", 0x6000000)
    if not base <= load or load + IMAGE_ROOM + area > base + size:
        raise BoardError(f"board file {path}: key 'load_address' is {load:#x}; the image and its memory area "
                         f"({area:#x} bytes) must fit in RAM ({base:#x} + {size:#x}) past it: move it, or make "
                         "'ram_size' larger or 'memory_area_bytes' smaller.")
    if arch == "aarch64":
        ram_blocks = range(base >> 30, ((base + size - 1) >> 30) + 1)
        for device in ("uart_base", "gicd_base", "gicc_base", "gicr_base"):
            if device in board and board[device] >> 30 in ram_blocks:
                raise BoardError(f"board file {path}: key '{device}' is {board[device]:#x}, in a 1 GiB block "
                                 "that RAM shares, which the image maps cacheable: give RAM that lies in other "
                                 "gigabytes ('ram_base', 'ram_size').")
    if any(k in board for k in PCI_KEYS):
        _check_pci(path, board)
    if arch == "aarch64" and base % (2 << 20):
        raise BoardError(f"board file {path}: key 'ram_base' is {base:#x}; on aarch64 give a 2 MiB aligned "
                         "RAM base (the Image header's text offset is counted from it).")


def _check_pci(path: Path, board: dict) -> None:
    """The host bridge's ECAM and windows: all or none, where pci.c and (aarch64) mmu.c can use them."""
    missing = [k for k in PCI_KEYS if k not in board]
    if missing:
        raise BoardError(f"board file {path}: key '{missing[0]}' is missing; the pci_ keys go together: give all "
                         "six, or none for a board without PCI.")
    arch = board["arch"]
    windows = {"pci_ecam": 1 << 20, "pci_mmio": 4096, "pci_pref": (2 << 20) if arch == "aarch64" else 4096}
    for window, align in windows.items():
        start, size = board[f"{window}_base"], board[f"{window}_size"]
        if start % align or size % align:
            raise BoardError(f"board file {path}: key '{window}_base' or '{window}_size' is not a multiple of "
                             f"{align:#x}; give a window that starts and ends {align >> 10} KiB aligned.")
        end = start + size
        limit = MAPPED_LIMIT[arch] if window == "pci_ecam" else 1 << 32
        if end > limit:
            raise BoardError(f"board file {path}: key '{window}_base' is {start:#x}; the window ends at {end:#x}, "
                             f"past {limit:#x}, the most the image "
                             f"{'maps' if window == 'pci_ecam' else 'writes in a 32-bit BAR'}: move it lower.")
    if board["pci_ecam_size"] > 256 << 20:
        raise BoardError(f"board file {path}: key 'pci_ecam_size' is {board['pci_ecam_size']:#x}; an ECAM has "
                         "1 MiB a bus and at most 256 buses: give at most 0x10000000.")
    spans = {"RAM": (board["ram_base"], board["ram_base"] + board["ram_size"])}
    spans |= {w: (board[f"{w}_base"], board[f"{w}_base"] + board[f"{w}_size"]) for w in windows}
    label = {"RAM": "RAM ('ram_base', 'ram_size')", "pci_ecam": "the ECAM", "pci_mmio": "the 'pci_mmio' window"}
    names = list(spans)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            if spans[a][0] < spans[b][1] and spans[b][0] < spans[a][1]:
                raise BoardError(f"board file {path}: key '{b}_base' is {spans[b][0]:#x}; its window overlaps "
                                 f"{label[a]}: give windows that overlap neither RAM nor each other.")
    if arch == "aarch64":
        pref_start, pref_end = spans["pci_pref"]
        if pref_start >> 30 != (pref_end - 1) >> 30:
            raise BoardError(f"board file {path}: key 'pci_pref_base' is {pref_start:#x}; the window must lie in "
                             "one 1 GiB block, which the image's level-2 table maps cacheable: move it or make "
                             "'pci_pref_size' smaller.")
        ram_blocks = range(board["ram_base"] >> 30, ((board["ram_base"] + board["ram_size"] - 1) >> 30) + 1)
        for window in ("pci_ecam", "pci_mmio"):
            start, end = spans[window]
            if any(block in ram_blocks for block in range(start >> 30, ((end - 1) >> 30) + 1)):
                raise BoardError(f"board file {path}: key '{window}_base' is {start:#x}, in a 1 GiB block that "
                                 "RAM shares, which the image maps cacheable: give a window in other gigabytes.")


def read_board(path: Path) -> dict:
    """The board file's keys, checked; BoardError names the first wrong one."""
    try:
        board = tomllib.loads(path.read_text())
    except OSError as e:
        raise BoardError(f"board file {path}: cannot be read ({e.strerror}); give the path of a board's TOML "
                         "file.") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise BoardError(f"board file {path}: is not TOML ({e}); fix the line it names.") from None
    arch = board.get("arch")
    known = {k.name: k for k in KEYS}
    for name, value in board.items():
        key = known.get(name)
        if key is None:
            raise BoardError(f"board file {path}: unknown key '{name}'; the keys are: {', '.join(known)}.")
        _check_value(path, key, value)
        if arch in ARCHES and arch not in key.arches:
            raise BoardError(f"board file {path}: key '{name}' is not a {arch} board's; remove it.")
    for key in KEYS:
        if key.required and (arch in key.arches or arch is None) and key.name not in board:
            raise BoardError(f"board file {path}: key '{key.name}' is missing; add it (docs/baremetal.md, "
                             "\"On a board\", says what it means).")
    _check_board(path, board)
    return board


def header(board: dict, source: Path) -> str:
    """The `#define`s board.h takes instead of its QEMU `virt` defaults."""
    lines = [f"/* Made by scripts/baremetal_board.py from {source}; edit that file, not this one. */"]
    for key in KEYS:
        if key.name not in board:
            continue
        value = board[key.name]
        if key.name == "name":
            lines.append(f'#define BOARD_NAME "{value}"')
        elif key.name == "gic":
            lines.append(f"#define BOARD_GIC_VERSION {GIC_VERSION[value]}")
        elif key.name == "timer":
            lines.append(f"#define BOARD_TIMER_PATH {TIMER_PATH[value]}")
        elif key.name == "counter_hz":
            lines.append(f"#define {COUNTER_HZ_MACRO[board['arch']]} {value}")
        elif key.macro:
            lines.append(f"#define {key.macro} {value:#x}" if key.kind in ("address", "size") else
                         f"#define {key.macro} {value}")
    if not any(k in board for k in PCI_KEYS):
        lines.append("#define BOARD_HAS_PCI 0")
    return "\n".join(lines) + "\n"


def keys_table() -> str:
    """docs/baremetal.md's table of keys (a test holds the two equal)."""
    rows = ["| key | boards | required | meaning | QEMU `virt` |", "|---|---|---|---|---|"]
    for k in KEYS:
        arches = "both" if k.arches == BOTH else k.arches[0]
        rows.append(f"| `{k.name}` | {arches} | {'yes' if k.required else 'no'} | {k.meaning} | {k.qemu_virt} |")
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Check a bare-metal board file and write its header.")
    parser.add_argument("board", nargs="?", type=Path)
    parser.add_argument("--arch", action="store_true", help="print the board's architecture")
    parser.add_argument("-o", "--output", type=Path, help="the header to write")
    parser.add_argument("--keys-table", action="store_true", help="print the docs' table of keys")
    args = parser.parse_args(argv)
    if args.keys_table:
        sys.stdout.write(keys_table())
        return 0
    if args.board is None:
        parser.error("give a board file")
    try:
        board = read_board(args.board)
    except BoardError as e:
        print(e, file=sys.stderr)
        return 2
    if args.arch:
        print(board["arch"])
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.output.with_suffix(".tmp")
        tmp.write_text(header(board, args.board))
        tmp.replace(args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
