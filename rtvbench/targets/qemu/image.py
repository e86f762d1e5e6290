"""What a qemu environment's image is: the arch a kernel's or a bare-metal image's header says, and the
campaign keys of an environment that boots the probe's bare-metal image (`image`) instead of a kernel."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rtvbench.probe import binary as probe_mod

#: what `image` names instead of a path: the image `make baremetal` builds, per arch
BUILT_IMAGE = "bare-metal"
BUILT_IMAGE_DIR = probe_mod.BUILD_DIR.parent / "baremetal"
#: QEMU's machine as the image's board header describes it: on aarch64 virt with the GICv2 it drives
MACHINE = {"aarch64": ("virt,gic-version=2", "cortex-a53"), "riscv64": ("virt", "rv64")}
#: the firmware QEMU loads before the image: riscv64's runs in S-mode under SBI (OpenSBI)
FIRMWARE = {"riscv64": ["-bios", "default"]}
#: the file of the built image: the riscv64 .bin has no header to say its arch, its ELF has
BUILT_FILE = {"aarch64": "rtvb-probe.bin", "riscv64": "rtvb-probe.elf"}
#: the campaign keys a partition takes; the others describe a Linux guest
PARTITION_KEYS = {"arch", "image", "memory_mb", "accel", "boot_timeout_s", "hang_timeout_s", "shm", "shm_size_mb"}
MAX_IMAGE_BYTES = 64 << 20
#: the RAM QEMU must give: the image is loaded with its memory area, which QEMU's loader counts as its size
MIN_MEMORY_MB = 128
#: the line the image carries of its board (probe/baremetal/board_note.c)
NOTE = re.compile(rb"rtvb-board-note mem_area_bytes=(0x[0-9a-fA-F]+|[0-9]+) pci_pref_bytes=(0x[0-9a-fA-F]+|[0-9]+)\n")


@dataclass(frozen=True)
class ImageBoard:
    """What an image says of the board it was built for, read from its file without booting it."""
    mem_area_bytes: int          # BOARD_MEM_AREA_BYTES: where mem-lat and mem-bw measure
    pci_pref_bytes: int          # BOARD_PCI_PREF_SIZE: the largest ivshmem region it maps; 0 without PCI


def image_board(path: str | Path) -> ImageBoard:
    """The board note of a built image (its .elf or .bin alike); ValueError when it has none."""
    try:
        found = NOTE.search(Path(path).read_bytes())
    except OSError as e:
        raise ValueError(f"{path} cannot be read ({e.strerror}); name an image `make baremetal` builds") from None
    if found is None:
        raise ValueError(f"{path} does not say its memory area and PCI window (it has no board note); rebuild it "
                         "with `make baremetal`")
    return ImageBoard(int(found[1], 0), int(found[2], 0))


def image_arch(path: Path) -> str | None:
    """The architecture a kernel image or a bare-metal image is for, when its header says so."""
    try:
        with open(path, "rb") as f:
            head = f.read(0x240)
    except OSError:
        return None
    if head[0x202:0x206] == b"HdrS":
        return "x86_64"
    if head[0x38:0x3C] == b"ARM\x64":
        return "aarch64"
    if head[:4] == b"\x7fELF" and len(head) > 0x14:
        return {62: "x86_64", 183: "aarch64", 243: "riscv64"}.get(int.from_bytes(head[0x12:0x14], "little"))
    return None                      # gzip'd or EFI zboot: cannot tell without unpacking


def image_path(value: str, arch: str | None, base_dir: str | None) -> str:
    """The image file `image` names: "bare-metal" (the built one of `arch`) or a path; ValueError why not."""
    if value == BUILT_IMAGE:
        if arch not in MACHINE:
            raise ValueError(f'"{BUILT_IMAGE}" is built for {" and ".join(MACHINE)} only, not {arch}; set '
                             'arch = "aarch64" or "riscv64"')
        path = BUILT_IMAGE_DIR / arch / BUILT_FILE[arch]
        if not path.is_file():
            raise ValueError(f"the bare-metal image {path} is not built; build it with `make baremetal`")
        return str(path)
    path = Path(value).expanduser()
    if not path.is_absolute():
        path = Path(base_dir or Path.cwd()) / path
    if not path.is_file():
        raise ValueError(f'{path} is not a file; name "{BUILT_IMAGE}" (the image `make baremetal` builds) or '
                         "the path of an image built the same way (relative to the campaign file)")
    size = path.stat().st_size
    if not 0 < size <= MAX_IMAGE_BYTES:
        raise ValueError(f"{path} is {size:,} bytes, not a bare-metal image (1 byte to {MAX_IMAGE_BYTES:,}); "
                         f'name "{BUILT_IMAGE}" or an image built as `make baremetal` builds it')
    # The image's header says its arch, as an arm64 Image's or an ELF's does.
    found = image_arch(path)
    if found != arch:
        # A raw riscv64 image has no header: its ELF says its arch.
        name = "the .elf of " if arch == "riscv64" else ""
        raise ValueError(f"{path} is not an {arch} image (its header says "
                         f"{found or 'no arch an image has'}); name {name}an image built for arch {arch} as "
                         "`make baremetal` builds it")
    image_board(path)
    return str(path)


def keys_problem(params: Any) -> str | None:
    """Why the keys of a qemu environment with `image` do not describe a bare-metal partition, or None."""
    if params.arch not in MACHINE:
        return (f'a bare-metal image runs on {" and ".join(MACHINE)} only, not {params.arch}; set arch = "aarch64" '
                'or "riscv64"')
    linux = sorted(k for k in params.model_fields_set - PARTITION_KEYS)
    if linux:
        return (f"{', '.join(linux)} {'describes' if len(linux) == 1 else 'describe'} a Linux guest, not a "
                f"bare-metal image (which takes {', '.join(sorted(PARTITION_KEYS))}); drop "
                f"{'it' if len(linux) == 1 else 'them'}")
    if params.accel == "kvm":
        return 'a bare-metal image runs under TCG here; use accel = "auto" or "tcg"'
    board = image_board(params.image)
    if "memory_mb" in params.model_fields_set and params.memory_mb < MIN_MEMORY_MB:
        return (f"memory_mb = {params.memory_mb} is less RAM than the bare-metal image needs ({MIN_MEMORY_MB} MiB: "
                f"QEMU loads it with its {board.mem_area_bytes / (1 << 20):g} MiB memory area); set memory_mb = "
                f"{MIN_MEMORY_MB} or more, or leave it out")
    if params.shm is not None and not board.pci_pref_bytes:
        return (f"shm = \"{params.shm}\" cannot reach the bare-metal image {params.image}: it was built for a board "
                "without PCI (its board file gives no pci_ keys), so it finds no ivshmem device; build it from a "
                "board with the pci_ keys, or drop shm")
    if params.shm is not None and params.shm_size_mb << 20 > board.pci_pref_bytes:
        most = board.pci_pref_bytes >> 20
        return (f"shm_size_mb = {params.shm_size_mb} is more than the bare-metal image maps: it places its ivshmem "
                f"region in a {most} MiB PCI window (its board's pci_pref_size); give at most {most}")
    return None


