"""Debian kernel images for QEMU guests: `rtvbench kernel fetch`.

A guest needs a kernel image, its config (to tell what kernel a result came from) and the few
modules the probe's init loads (virtio transport, console, rng, vsock). Debian ships them in
`linux-image-<abi>-<flavour>` packages; this module resolves the flavour's meta-package to the
current one, downloads it with a private apt state (the host's apt configuration and dpkg
architectures stay untouched, so arm64 kernels come to an amd64 host as well) and keeps only
what a guest uses:

    dest/<package>_<version>/vmlinuz                      bootable by `qemu-system-* -kernel`
    dest/<package>_<version>/config
    dest/<package>_<version>/modules/<release>/kernel/... the virtio/vsock modules and their deps
    dest/<package>_<version>/modules/<release>/modules.dep
    dest/<arch>[-rt] -> <package>_<version>
"""

from __future__ import annotations

import fcntl
import gzip
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import click

from rtvbench.errors import EXIT_OK, InputError, TargetError
from rtvbench.targets.qemu.kmod import modinfo, module_bytes

# rtvbench's architecture names (those of `uname -m` and QEMU) -> Debian's.
DEBIAN_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}
_ALIASES = {"amd64": "x86_64", "arm64": "aarch64"}

# Modules a guest wants (paths under lib/modules/<release>/kernel, as globs); everything they
# depend on comes along (virtio_net brings net_failover and failover).
WANTED_MODULES = ("drivers/virtio/*.ko*", "drivers/char/virtio_console.ko*",
                  "drivers/char/hw_random/virtio-rng.ko*", "net/vmw_vsock/*.ko*",
                  "drivers/net/virtio_net.ko*")
#: in a fetched kernel's directory: the WANTED_MODULES its modules were selected by. A kernel
#: fetched when the list was shorter is extracted again (from the cached package) by the next fetch.
SELECTION = "modules.wanted"

# The ABI part of an image package name: 6.1.0-56 (bookworm), 6.12.43+deb13 (trixie).
_ABI = r"\d+\.\d+\.\d+(?:-\d+|\+\w+)"
_KO = re.compile(r"\.ko(\.xz|\.gz)?$")
_ARM64_MAGIC = b"ARMd"          # at 0x38 of an arm64 Image (Documentation/arm64/booting.rst)
_BZIMAGE_MAGIC = b"HdrS"        # at 0x202 of an x86 bzImage (Documentation/x86/boot.rst)

Report = Callable[[str], None]


def canonical_arch(arch: str) -> str:
    """`x86_64` or `aarch64` for any name of them rtvbench accepts."""
    name = _ALIASES.get(arch, arch)
    if name not in DEBIAN_ARCH:
        raise InputError(f"unknown kernel architecture {arch!r}; use --arch x86_64 or --arch aarch64.")
    return name


def fetch(arch: str, rt: bool, dest: Path, report: Report | None = None, *,
          cache: Path | None = None) -> Path:
    """Fetch Debian's current kernel of this flavour into `dest`; the path of its image.

    `cache` (default `dest/.cache`) holds the private apt state and the downloaded packages, so a
    later fetch of the same version downloads nothing."""
    say = report or (lambda _line: None)
    arch = canonical_arch(arch)
    debarch = DEBIAN_ARCH[arch]
    flavour = f"rt-{debarch}" if rt else debarch
    dest = Path(dest)
    if dest.exists() and not dest.is_dir():
        raise InputError(f"kernel destination {dest} is not a directory; choose another with --dest.")
    # apt-get download runs inside the cache: apt's directories must not depend on the cwd.
    cache = (Path(cache) if cache is not None else dest / ".cache").absolute()
    try:
        dest.mkdir(parents=True, exist_ok=True)
        apt = _Apt(cache / "apt" / debarch, debarch)
    except OSError as e:
        raise InputError(f"cannot create the kernel directories under {dest} or {cache} "
                         f"({e.strerror}); choose others with --dest or --cache.") from None
    link = dest / (f"{arch}-rt" if rt else arch)
    if link.exists() and not link.is_symlink():
        raise InputError(f"{link} exists and is not a symlink rtvbench made; move it away or "
                         "choose another --dest.")

    with apt.locked():
        say(f"Updating the {debarch} package lists (private apt state in {apt.root}) ...")
        warning = apt.update(f"linux-image-{flavour}")
        if warning:
            say(warning)
        package = apt.image_package(f"linux-image-{flavour}", flavour)
        info = apt.show(package)
        version = info["Version"]
        name = f"{package}_{version.replace(':', '%3a')}"
        target = dest / name
        say(f"linux-image-{flavour} is {package} {version}.")
        try:
            if target.is_dir() and _selected(target) == _selection():
                say(f"{package} {version} is already in {target}; nothing downloaded.")
            else:
                deb = _download(apt, cache / "debs", package, version, info, say)
                _unpack(deb, dest, target, arch, say)
                _prune(cache / "debs", flavour, keep=deb)
            _point(link, name, say)
        except OSError as e:
            raise TargetError(f"cannot write {package} under {dest} or {cache} ({e.strerror}); free "
                              "some space or choose another --dest or --cache, then retry.") from None
    return target / "vmlinuz"


# ---------------------------------------------------------------------------
# apt with a private state


class _Apt:
    """apt-get/apt-cache for one Debian architecture, with lists and caches of its own.

    The host's sources (sources.list, sources.list.d/*.list and *.sources) and keyrings are
    reused; nothing under /etc/apt or /var/lib/apt is written."""

    def __init__(self, root: Path, debarch: str) -> None:
        self.root = root
        self.debarch = debarch
        for d in ("state/lists/partial", "cache/archives/partial", "preferences.d"):
            (root / d).mkdir(parents=True, exist_ok=True)
        # An empty dpkg status: resolution must not depend on what this host has installed.
        (root / "state" / "status").touch()
        self.options = [
            "-o", f"Dir::State={root / 'state'}", "-o", f"Dir::State::status={root / 'state' / 'status'}",
            "-o", f"Dir::Cache={root / 'cache'}",
            # Keep the binary package cache even where the host disables it (Debian's docker images
            # do): it saves a second of parsing on each of the three apt-cache calls.
            "-o", "Dir::Cache::pkgcache=pkgcache.bin", "-o", "Dir::Cache::srcpkgcache=",
            # The host's pins are about its own packages, not about which kernel Debian ships now.
            "-o", f"Dir::Etc::preferences={root / 'preferences'}",
            "-o", f"Dir::Etc::preferencesparts={root / 'preferences.d'}",
            "-o", f"APT::Architecture={debarch}", "-o", f"APT::Architectures={debarch}",
            # Only the Packages indexes are needed: no translations, no AppStream metadata.
            "-o", "Acquire::Languages=none",
            "-o", "Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false",
        ]
        if os.geteuid() == 0:
            # apt would drop to the _apt user, who may not reach a private directory (e.g. under
            # /root): it then falls back to root anyway and warns. Packages are signature-checked.
            self.options += ["-o", "APT::Sandbox::User=root"]

    def locked(self):
        """Serialise fetches sharing this state (apt's own locks would fail instead of waiting)."""
        return _FileLock(self.root / "rtvbench.lock")

    def run(self, tool: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
        try:
            return subprocess.run([tool, *self.options, *args], cwd=cwd, capture_output=True,
                                  text=True, env={**os.environ, "LC_ALL": "C.UTF-8"})
        except FileNotFoundError:
            raise TargetError(f"this host has no {tool}; `rtvbench kernel fetch` needs a Debian-based "
                              "host with apt.") from None

    def update(self, meta: str) -> str | None:
        """Refresh the lists; a warning when they could only partly be refreshed."""
        r = self.run("apt-get", "-q", "update")
        if r.returncode == 0:
            return None
        # One unreachable third-party source fails the whole update; the Debian indexes
        # that did arrive may still know the package.
        if self.run("apt-cache", "show", "--no-all-versions", meta).returncode != 0:
            raise TargetError(f"apt-get update for {self.debarch} failed ({_apt_error(r)}); "
                              "check the network and /etc/apt/sources.list*, then retry.")
        return (f"apt-get update reported an error ({_apt_error(r)}); going on with the "
                "package lists it has.")

    def show(self, package: str) -> dict[str, str]:
        r = self.run("apt-cache", "show", "--no-all-versions", package)
        if r.returncode != 0 or not r.stdout.strip():
            raise TargetError(f"the apt sources of this host have no {self.debarch} package "
                              f"{package} ({_apt_error(r)}); add Debian's main archive to "
                              "/etc/apt/sources.list*, then retry.")
        fields = {}
        for line in r.stdout.splitlines():
            key, sep, value = line.partition(": ")
            if sep and not line.startswith(" "):
                fields.setdefault(key, value.strip())
        return fields

    def image_package(self, meta: str, flavour: str) -> str:
        """The linux-image-<abi>-<flavour> package `meta` currently depends on."""
        self.show(meta)                     # a clear error when the sources lack it
        r = self.run("apt-cache", "depends", "--no-recommends", "--no-suggests", meta)
        image = re.compile(rf"linux-image-{_ABI}-{re.escape(flavour)}(-unsigned)?")
        found = [m.group(1) for m in re.finditer(rf"Depends: <?({image.pattern})>?[ \t]*$", r.stdout,
                                                 re.MULTILINE)]
        if not found:
            raise TargetError(f"{meta} depends on no linux-image-<version>-{flavour} package "
                              f"({_apt_error(r) or r.stdout.strip()!r}); the archive may be in the "
                              "middle of an update, retry later.")
        # Depends alternatives may name the signed and the unsigned build: boot the signed one.
        return min(found, key=lambda p: p.endswith("-unsigned"))

    def download(self, package: str, version: str, into: Path) -> None:
        r = self.run("apt-get", "-q", "download", f"{package}={version}", cwd=into)
        if r.returncode != 0:
            raise TargetError(f"apt-get download {package}={version} failed ({_apt_error(r)}); "
                              "check the network and the apt sources, then retry.")


def _apt_error(r: subprocess.CompletedProcess) -> str:
    lines = [ln.strip() for ln in (r.stderr or "").splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("E:")]
    return (errors or lines or [f"exit status {r.returncode}"])[0]


class _FileLock:
    def __init__(self, path: Path) -> None:
        self.path = path

    def __enter__(self):
        self.fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        os.close(self.fd)          # closing releases the lock


# ---------------------------------------------------------------------------
# download, unpack, select


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _download(apt: _Apt, debs: Path, package: str, version: str, info: dict[str, str],
              say: Report) -> Path:
    debs.mkdir(parents=True, exist_ok=True)
    deb = debs / f"{package}_{version.replace(':', '%3a')}_{apt.debarch}.deb"
    if deb.is_file() and _sha256(deb) == info.get("SHA256"):
        say(f"Using the cached {deb.name}; nothing downloaded.")
        return deb
    size = int(info.get("Size", 0))
    say(f"Downloading {package} {version} ({size / 1e6:.1f} MB) ...")
    start = time.monotonic()
    apt.download(package, version, debs)
    elapsed = time.monotonic() - start
    if not deb.is_file():
        raise TargetError(f"apt-get download {package}={version} left no {deb.name} in {debs}; "
                          "remove that directory and retry.")
    say(f"Downloaded {deb.stat().st_size / 1e6:.1f} MB in {elapsed:.1f} s.")
    return deb


def _unpack(deb: Path, dest: Path, target: Path, arch: str, say: Report) -> None:
    """Extract `deb` and move the kept files to `target` in one rename: never half a kernel."""
    say(f"Extracting {deb.name} ...")
    start = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix=".fetch-", dir=dest))
    try:
        root, out = scratch / "root", scratch / "out"
        r = subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], capture_output=True, text=True)
        if r.returncode != 0:
            raise TargetError(f"dpkg-deb cannot extract {deb} ({r.stderr.strip() or r.returncode}); "
                              "delete it and retry.")
        images = sorted((root / "boot").glob("vmlinu[xz]-*"))
        configs = sorted((root / "boot").glob("config-*"))
        module_roots = sorted(p for base in ("lib/modules", "usr/lib/modules")
                              for p in (root / base).glob("*") if p.is_dir())
        if len(images) != 1 or len(configs) != 1 or len(module_roots) != 1:
            raise TargetError(f"{deb.name} does not hold one /boot/vmlinuz-*, one /boot/config-* and "
                              "one modules directory; it is not a Debian kernel image package.")
        release = module_roots[0].name
        out.mkdir()
        _write_image(images[0], out / "vmlinuz", arch, deb.name)
        shutil.copyfile(configs[0], out / "config")
        count = _select_modules(module_roots[0], out / "modules" / release, deb.name)
        (out / SELECTION).write_text(_selection())
        if target.is_dir():
            # Fetched before the module list grew: swapped for the new selection.
            os.rename(target, scratch / "old")
        os.rename(out, target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    say(f"Kept vmlinuz ({(target / 'vmlinuz').stat().st_size / 1e6:.1f} MB), config and "
        f"{count} modules of kernel {release} in {target} ({time.monotonic() - start:.1f} s).")


def _selection() -> str:
    return "".join(f"{pattern}\n" for pattern in WANTED_MODULES)


def _selected(target: Path) -> str | None:
    try:
        return (target / SELECTION).read_text()
    except OSError:
        return None


def _write_image(src: Path, dst: Path, arch: str, origin: str) -> None:
    data = src.read_bytes()
    if arch == "aarch64":
        # Debian's signed arm64 image is a plain Image (an EFI binary); an unsigned one may be a
        # gzipped Image. A plain Image boots with any loader, so always keep that.
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        if data[0x38:0x3c] != _ARM64_MAGIC:
            raise TargetError(f"the image in {origin} is not an arm64 Linux Image; report this "
                              "package to the rtvbench maintainers.")
    elif data[0x202:0x206] != _BZIMAGE_MAGIC:
        raise TargetError(f"the image in {origin} is not an x86 bzImage; report this package "
                          "to the rtvbench maintainers.")
    dst.write_bytes(data)


def _module_name(path: Path) -> str:
    # The kernel treats '-' and '_' in module names alike; depends= uses the underscore form.
    return _KO.sub("", path.name).replace("-", "_")


def _select_modules(src: Path, dst: Path, origin: str) -> int:
    """Copy the wanted modules and their dependencies, decompressed; write modules.dep."""
    kernel = src / "kernel"
    index = {_module_name(p): p for p in kernel.rglob("*.ko*") if _KO.search(p.name)}
    wanted = []
    for pattern in WANTED_MODULES:
        wanted += [p for p in kernel.glob(pattern) if _KO.search(p.name)]
    pending = sorted({_module_name(p) for p in wanted})
    if "virtio_console" not in pending:
        raise TargetError(f"{origin} has no virtio_console module; this kernel cannot run a guest "
                          "probe, choose another flavour.")
    depends: dict[str, list[str]] = {}
    while pending:
        name = pending.pop()
        if name in depends:
            continue
        raw = module_bytes(index[name])
        info = modinfo(raw)
        if info is None:
            raise TargetError(f"{origin}: {index[name].name} is not a kernel module (no .modinfo section); "
                              "the package is broken, retry when the archive has a fixed one.")
        depends[name] = [d.replace("-", "_") for d in info.get("depends", "").split(",") if d]
        for dep in depends[name]:
            if dep not in index:
                raise TargetError(f"{origin} lacks module {dep}, which {name} depends on; the package "
                                  "is broken, retry when the archive has a fixed one.")
            pending.append(dep)
        rel = index[name].relative_to(src).with_name(_KO.sub(".ko", index[name].name))
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        (dst / rel).write_bytes(raw)

    def closure(name: str, seen: list[str]) -> list[str]:
        # Every (transitive) dependency after the modules needing it, as depmod writes them:
        # loading the list from its end satisfies each module before it is loaded.
        for dep in depends[name]:
            if dep in seen:
                seen.remove(dep)
            seen.append(dep)
            closure(dep, seen)
        return seen

    def rel(name: str) -> str:
        return str(index[name].relative_to(src).with_name(_KO.sub(".ko", index[name].name)))

    (dst / "modules.dep").write_text("".join(
        f"{rel(n)}:{''.join(' ' + rel(d) for d in closure(n, []))}\n" for n in sorted(depends)))
    return len(depends)


def _prune(debs: Path, flavour: str, keep: Path) -> None:
    """Drop cached packages of this flavour's older versions: one package is enough to refetch."""
    older = re.compile(rf"linux-image-{_ABI}-{re.escape(flavour)}(-unsigned)?_")
    for p in debs.glob("*.deb"):
        if p != keep and older.match(p.name):
            p.unlink(missing_ok=True)


def _point(link: Path, name: str, say: Report) -> None:
    previous = os.readlink(link) if link.is_symlink() else None
    if previous == name:
        return
    tmp = link.with_name(f".{link.name}.new")
    tmp.unlink(missing_ok=True)
    os.symlink(name, tmp)
    os.replace(tmp, link)            # atomic: a campaign never sees a missing kernel
    say(f"{link} -> {name}" + (f" (was {previous})." if previous else "."))


# ---------------------------------------------------------------------------
# CLI


@click.group()
def kernel() -> None:
    """Kernel images for QEMU guests, from Debian's archive."""


@kernel.command(name="fetch")
@click.option("--arch", required=True, metavar="aarch64|x86_64", help="Guest architecture.")
@click.option("--rt", is_flag=True, help="The PREEMPT_RT build (Debian's rt flavour).")
@click.option("--dest", type=click.Path(path_type=Path), default=Path("kernels"), show_default=True,
              help="Directory of the kernels and of the <arch>[-rt] symlinks.")
@click.option("--cache", type=click.Path(path_type=Path),
              help="Private apt state and downloaded packages (default: DEST/.cache).")
def fetch_command(arch: str, rt: bool, dest: Path, cache: Path | None) -> int:
    """Fetch Debian's current kernel for ARCH into DEST (does nothing if it is already there)."""
    image = fetch(arch, rt, dest, lambda line: click.echo(line, err=True), cache=cache)
    link = dest / (f"{canonical_arch(arch)}-rt" if rt else canonical_arch(arch))
    click.echo(f"Kernel: {link / 'vmlinuz'} ({image})")
    return EXIT_OK
