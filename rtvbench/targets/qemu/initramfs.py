"""The initramfs a qemu guest boots with: rtvb-probe as /init and the kernel modules it needs.

The guest has no shell and no userland: the probe is PID 1 (docs/targets/qemu.md). The archive
is a gzip'd cpio in the "newc" format, which the kernel unpacks into its rootfs:

    /init                   the static probe for the guest's architecture
    /dev/console            character device 5,1: where the kernel opens init's stdio
    /proc /sys /dev /tmp    empty mount points
    /modules/*.ko           the virtio console and PCI transport drivers (and virtio_net for guests
                            with a network) and what they depend on,
    /modules/order          one file name per line, dependencies first (the probe loads them in order)

Module dependencies come from each .ko's own `.modinfo` section (`depends=`), not from
modules.dep, so a bare directory of .ko files is enough. Archives are cached by the hash of
their content: booting the same kernel and probe again costs no rebuild.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import lzma
import os
import re
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rtvbench.errors import InputError
from rtvbench.targets.qemu.kmod import modinfo, module_bytes

#: the drivers the data channel needs: the virtio-serial port and the virtio-pci transport it
#: sits on (q35 and arm virt both have PCI). A kernel with them built in needs no module.
WANTED_MODULES = ("virtio_console", "virtio_pci")
#: Kconfig symbols of WANTED_MODULES, to tell "built in" from "missing" when the config is known
WANTED_CONFIG = {"virtio_console": "CONFIG_VIRTIO_CONSOLE", "virtio_pci": "CONFIG_VIRTIO_PCI",
                 "virtio_net": "CONFIG_VIRTIO_NET"}
#: the NIC's driver, for guests with `network = true` (it brings net_failover and failover)
NET_MODULES = ("virtio_net",)
MODULE_SUFFIXES = (".ko", ".ko.xz", ".ko.gz")
#: bump when the archive's layout changes, so that old cache entries are not reused
FORMAT = 1

_S_IFDIR, _S_IFREG, _S_IFCHR = 0o040000, 0o100000, 0o020000


# ---------------------------------------------------------------------------
# cpio "newc"


class CpioWriter:
    """Writes a newc archive: each entry is a 110-byte ASCII header, the NUL-terminated name and
    the data, name and data each padded to a multiple of 4 bytes; a TRAILER!!! entry ends it.
    Times and owners are zero so that the same input gives the same bytes."""

    def __init__(self, out: io.BufferedIOBase) -> None:
        self.out = out
        self.ino = 0

    def _entry(self, name: str, mode: int, data: bytes = b"", rdev: tuple[int, int] = (0, 0),
               nlink: int = 1) -> None:
        self.ino += 1
        raw = name.encode() + b"\0"
        fields = (self.ino, mode, 0, 0, nlink, 0, len(data), 0, 0, rdev[0], rdev[1], len(raw), 0)
        header = b"070701" + b"".join(b"%08X" % f for f in fields)
        self.out.write(header + raw + b"\0" * (-(len(header) + len(raw)) % 4))
        self.out.write(data + b"\0" * (-len(data) % 4))

    def directory(self, name: str, perm: int = 0o755) -> None:
        self._entry(name, _S_IFDIR | perm, nlink=2)

    def file(self, name: str, data: bytes, perm: int = 0o644) -> None:
        self._entry(name, _S_IFREG | perm, data)

    def char_device(self, name: str, major: int, minor: int, perm: int = 0o600) -> None:
        self._entry(name, _S_IFCHR | perm, rdev=(major, minor))

    def finish(self) -> None:
        self.ino = 0
        self._entry("TRAILER!!!", 0, nlink=1)


# ---------------------------------------------------------------------------
# Kernel modules


@dataclass
class Module:
    name: str                   # as the kernel knows it: underscores, no suffix
    path: Path
    depends: list[str]
    vermagic: str


def read_module(path: Path) -> Module | None:
    """A module's name, dependencies and vermagic from its .modinfo; None if it is not a module."""
    try:
        fields = modinfo(module_bytes(path))
    except (OSError, lzma.LZMAError, gzip.BadGzipFile, EOFError):
        return None
    if fields is None:
        return None
    stem = path.name
    for suffix in MODULE_SUFFIXES:
        if stem.endswith(suffix):
            stem = stem[:-len(suffix)]
            break
    name = fields.get("name") or stem.replace("-", "_")
    depends = [d.replace("-", "_") for d in fields.get("depends", "").split(",") if d]
    return Module(name, path, depends, fields.get("vermagic", ""))


def index_modules(root: Path) -> dict[str, Path]:
    """Module name -> file, for every module file under root."""
    found: dict[str, Path] = {}
    for dirpath, _dirs, files in os.walk(root):
        for f in sorted(files):
            for suffix in MODULE_SUFFIXES:
                if f.endswith(suffix):
                    found.setdefault(f[:-len(suffix)].replace("-", "_"), Path(dirpath) / f)
    return found


def module_root(modules: Path, release: str | None) -> Path:
    """The directory of one kernel's modules inside `modules`: modules itself when it holds
    kernel/ or .ko files, else its subdirectory named after the kernel release, else its only
    subdirectory."""
    if (modules / "kernel").is_dir() or any(modules.glob("*.ko*")):
        return modules
    if release and (modules / release).is_dir():
        return modules / release
    subdirs = [d for d in modules.iterdir() if d.is_dir()]
    if not subdirs:
        return modules                  # no modules at all: resolve_modules decides
    if len(subdirs) == 1:
        return subdirs[0]
    names = ", ".join(sorted(d.name for d in subdirs)) or "none"
    raise InputError(f"modules directory {modules} has no modules for kernel {release or '(unknown release)'} "
                     f"(subdirectories: {names}); point `modules` at the directory of that kernel's modules.")


def resolve_modules(modules: Path, release: str | None, config: dict[str, str] | None = None,
                    wanted: tuple[str, ...] = WANTED_MODULES) -> list[Module]:
    """The modules to load for `wanted`, dependencies first. A wanted module that is absent is
    taken as built in, unless the kernel config says it is a module (=m): then the directory
    is incomplete and the guest could not talk to the host, which is an error now, not a boot
    timeout later."""
    root = module_root(modules, release)
    files = index_modules(root)
    order: list[Module] = []
    done: set[str] = set()

    def visit(name: str, chain: tuple[str, ...]) -> None:
        if name in done:
            return
        path = files.get(name)
        if path is None:
            if chain:
                raise InputError(f"module {chain[-1]} in {root} depends on {name}, which is not there; "
                                 "copy the kernel's whole modules tree (or use `rtvbench kernel fetch`).")
            symbol = WANTED_CONFIG.get(name)
            if config is not None and symbol and config.get(symbol) == "m":
                refetch = (" (a kernel fetched by an rtvbench without network support: run `rtvbench kernel "
                           "fetch` again, it adds the module)" if name in NET_MODULES else "")
                raise InputError(f"the kernel builds {name} as a module ({symbol}=m) but {root} has no "
                                 f"{name}.ko{refetch}; point `modules` at that kernel's modules.")
            done.add(name)
            return
        mod = read_module(path)
        if mod is None:
            raise InputError(f"{path} is not a kernel module (no .modinfo section); "
                             "point `modules` at the kernel's modules directory.")
        if release and mod.vermagic and mod.vermagic.split()[0] != release:
            raise InputError(f"{path} was built for kernel {mod.vermagic.split()[0]}, not for the kernel "
                             f"image's {release}; use the modules of the same kernel build.")
        done.add(name)      # before the dependencies: a cycle cannot recurse forever
        for dep in mod.depends:
            visit(dep, chain + (name,))
        order.append(mod)

    for name in wanted:
        visit(name, ())
    return order


# ---------------------------------------------------------------------------
# Kernel image facts


_BANNER = re.compile(rb"Linux version (\d[^\s%]*) \(")


def kernel_release(image: Path) -> str | None:
    """The release string (`uname -r`) of a kernel image, or None when it cannot be found.

    x86 bzImages name it in their setup header; other images (arm64 Image, gzip'd or not)
    carry the `Linux version ...` banner in their uncompressed text."""
    try:
        data = image.read_bytes()
    except OSError:
        return None
    if len(data) > 0x210 and data[0x202:0x206] == b"HdrS":
        ptr, = struct.unpack_from("<H", data, 0x20E)
        start = ptr + 0x200
        if 0x200 < start < len(data):
            text = data[start:start + 256].split(b"\0")[0].decode("ascii", "replace")
            if text.split():
                return text.split()[0]
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError):
            return None
    m = _BANNER.search(data)
    return m.group(1).decode("ascii", "replace") if m else None


def read_kernel_config(path: Path) -> dict[str, str] | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.startswith("CONFIG_"):
            out[key] = value
    return out


def kernel_config_for(image: Path, release: str | None) -> dict[str, str] | None:
    """The kernel's .config when it lies beside the image: `config` (rtvbench kernel fetch's
    layout) or `config-<release>` (a distribution's /boot)."""
    for name in ("config", f"config-{release}" if release else None):
        if name and (image.parent / name).is_file():
            return read_kernel_config(image.parent / name)
    return None


# ---------------------------------------------------------------------------
# The archive


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rtvbench" / "initramfs"


def build_initramfs(probe: Path, modules: list[Module], cache: Path | None = None) -> Path:
    """The gzip'd newc archive with `probe` as /init and `modules` in that load order; built
    once per distinct content and kept in the cache directory."""
    try:
        probe_bytes = probe.read_bytes()
    except OSError as e:
        raise InputError(f"cannot read the probe {probe} ({e.strerror}); build it with "
                         "`make probe` / `make probe-cross`.") from None
    blobs = [(f"{m.name}.ko", module_bytes(m.path)) for m in modules]
    digest = hashlib.sha256(b"rtvbench-initramfs %d\0" % FORMAT)
    digest.update(hashlib.sha256(probe_bytes).digest())
    for name, data in blobs:
        digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    cache = cache or cache_dir()
    out = cache / f"{digest.hexdigest()[:32]}.cpio.gz"
    if out.is_file():
        return out

    raw = io.BytesIO()
    w = CpioWriter(raw)
    for d in ("dev", "proc", "sys", "tmp", "modules"):
        w.directory(d, 0o1777 if d == "tmp" else 0o755)
    w.char_device("dev/console", 5, 1)
    w.file("init", probe_bytes, 0o755)
    for name, data in blobs:
        w.file(f"modules/{name}", data)
    w.file("modules/order", "".join(f"{name}\n" for name, _ in blobs).encode())
    w.finish()

    cache.mkdir(parents=True, exist_ok=True)
    # Written under a temporary name and renamed: a concurrent boot never reads half an archive.
    fd, tmp = tempfile.mkstemp(dir=cache, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            with gzip.GzipFile(fileobj=f, mode="wb", mtime=0, compresslevel=6) as gz:
                gz.write(raw.getvalue())
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out
