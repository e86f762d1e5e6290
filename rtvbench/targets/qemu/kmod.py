"""Kernel module files: their bytes, and the key=value pairs of their `.modinfo` ELF section.

Debian's kernel packages carry no modules.dep (depmod writes it at install time), so both the
kernel fetch (which modules to keep) and the initramfs builder (in which order to load them) read
each module's own `depends=`, `name=` and `vermagic=` from the file.
"""

from __future__ import annotations

import gzip
import lzma
import struct
from pathlib import Path


def module_bytes(path: Path) -> bytes:
    """A module file's contents, uncompressed (Debian may ship .ko.xz or .ko.gz)."""
    data = path.read_bytes()
    if path.name.endswith(".xz"):
        return lzma.decompress(data)
    if path.name.endswith(".gz"):
        return gzip.decompress(data)
    return data


def elf_section(data: bytes, wanted: str) -> bytes | None:
    """The bytes of the ELF section named `wanted`, or None (32/64-bit, either byte order)."""
    if data[:4] != b"\x7fELF" or data[4] not in (1, 2) or data[5] not in (1, 2):
        return None
    is64, order = data[4] == 2, "<" if data[5] == 1 else ">"
    if is64:
        shoff, = struct.unpack_from(order + "Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", data, 0x3A)
    else:
        shoff, = struct.unpack_from(order + "I", data, 0x20)
        shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", data, 0x2E)

    def header(i: int) -> tuple[int, int, int]:
        base = shoff + i * shentsize
        if is64:
            name, = struct.unpack_from(order + "I", data, base)
            off, size = struct.unpack_from(order + "QQ", data, base + 0x18)
        else:
            name, = struct.unpack_from(order + "I", data, base)
            off, size = struct.unpack_from(order + "II", data, base + 0x10)
        return name, off, size

    try:
        _, str_off, str_size = header(shstrndx)
        names = data[str_off:str_off + str_size]
        for i in range(shnum):
            name_off, off, size = header(i)
            end = names.find(b"\0", name_off)
            if names[name_off:end].decode("ascii", "replace") == wanted:
                return data[off:off + size]
    except struct.error:
        return None
    return None


def modinfo(data: bytes) -> dict[str, str] | None:
    """The .modinfo pairs of a module's (uncompressed) bytes, first value of each key; None when
    the data is not an ELF file with a .modinfo section."""
    section = elf_section(data, ".modinfo")
    if section is None:
        return None
    fields: dict[str, str] = {}
    for item in section.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            fields.setdefault(key.decode("ascii", "replace"), value.decode("utf-8", "replace"))
    return fields
