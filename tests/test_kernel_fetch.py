"""`rtvbench kernel fetch` against Debian's real archive: each package is downloaded once per
test session (one shared cache), its image, config and module selection checked independently of
the code that made them (bzImage header, arm64 Image header, module .modinfo read byte-wise)."""

from __future__ import annotations

import gzip
import os
import re
import select
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from host_helpers import REPO, cli_env, run_cli
from rtvbench.targets.qemu.kernels import _prune, fetch

pytestmark = [pytest.mark.skipif(shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None,
                                 reason="kernel fetch needs apt-get and dpkg-deb (a Debian host)"),
              pytest.mark.functional]


@pytest.fixture(scope="session")
def kernel_cache(tmp_path_factory):
    """Private apt state and downloaded packages, shared by every test of the session: the one
    `make kernels` filled (kernels/.cache) when it exists, so `make test` downloads each package
    once, else a temporary one."""
    shared = REPO / "kernels" / ".cache"
    if shared.is_dir():
        yield shared
        return
    path = tmp_path_factory.mktemp("kernel-cache")
    yield path
    shutil.rmtree(path, ignore_errors=True)     # ~400 MB: not worth keeping in pytest's tmp dirs


class Fetched:
    def __init__(self, dest: Path, cache: Path) -> None:
        self.dest, self.cache = dest, cache
        self.done: dict[tuple[str, bool], tuple[Path, list[str]]] = {}

    def __call__(self, arch: str, rt: bool = False) -> tuple[Path, list[str]]:
        """(image path, report lines of the first fetch) of this flavour into the shared dest."""
        if (arch, rt) not in self.done:
            lines: list[str] = []
            image = fetch(arch, rt, self.dest, lines.append, cache=self.cache)
            self.done[arch, rt] = image, lines
        return self.done[arch, rt]


@pytest.fixture(scope="session")
def fetched(tmp_path_factory, kernel_cache):
    f = Fetched(tmp_path_factory.mktemp("kernels"), kernel_cache)
    yield f
    shutil.rmtree(f.dest, ignore_errors=True)


def _module_field(ko: bytes, key: str) -> str | None:
    # .modinfo is a run of NUL-terminated key=value strings; no ELF parsing needed to find them.
    m = re.search(rb"\0" + key.encode() + rb"=([^\0]*)\0", ko)
    return m.group(1).decode() if m else None


def _check_layout(image: Path, package_prefix: str) -> tuple[str, Path]:
    """The kept files are exactly vmlinuz, config, modules/<release> and the module selection they
    were kept by; the release and the package name agree. Returns (release, modules dir)."""
    d = image.parent
    assert image.name == "vmlinuz" and d.name.startswith(package_prefix)
    assert sorted(p.name for p in d.iterdir()) == ["config", "modules", "modules.wanted", "vmlinuz"]
    (mod_dir,) = (d / "modules").iterdir()
    release = mod_dir.name
    package, _, version = d.name.partition("_")
    assert package == f"linux-image-{release}"
    assert re.fullmatch(r"\d+\.\d+\.\d+-\d+", version), version
    assert not list(d.parent.glob(".fetch-*")), "a scratch directory was left behind"
    return release, mod_dir


@pytest.mark.parametrize("rt", [False, True], ids=["generic", "rt"])
def test_x86_64_image_release_and_config(fetched, rt):
    image, lines = fetched("x86_64", rt)
    flavour = "rt-amd64" if rt else "amd64"
    release, _ = _check_layout(image, "linux-image-")
    assert re.fullmatch(rf"\d+\.\d+\.\d+-\d+-{flavour}", release)

    # The bzImage header: "HdrS" at 0x202, a pointer (+0x200) to the version string at 0x20e.
    data = image.read_bytes()
    assert data[0x202:0x206] == b"HdrS"
    start = int.from_bytes(data[0x20e:0x210], "little") + 0x200
    version = data[start:data.index(b"\0", start)].decode()
    assert version.split()[0] == release, version

    config = (image.parent / "config").read_text()
    assert ("CONFIG_PREEMPT_RT=y" in config.splitlines()) == rt
    assert "CONFIG_VIRTIO_CONSOLE=m" in config.splitlines()

    link = fetched.dest / ("x86_64-rt" if rt else "x86_64")
    assert link.is_symlink() and os.readlink(link) == image.parent.name
    assert (link / "vmlinuz").read_bytes() == data
    # The first fetch downloaded the package and said how big it was.
    assert any(re.fullmatch(rf"Downloading linux-image-{release} \S+ \(\d+\.\d MB\) \.\.\.", ln)
               or ln.startswith("Using the cached ") for ln in lines), lines


def test_aarch64_image_is_a_bootable_arm64_image(fetched):
    image, _ = fetched("aarch64")
    release, _ = _check_layout(image, "linux-image-")
    assert release.endswith("-arm64")
    data = image.read_bytes()
    if data[:2] == b"\x1f\x8b":                 # rtvbench keeps plain Images; accept gzip anyway
        data = gzip.decompress(data)
    assert data[0x38:0x3c] == b"ARMd"           # arm64 Image header magic
    assert f"Linux version {release} ".encode() in data

    qemu = shutil.which("qemu-system-aarch64")
    if qemu is None:
        pytest.skip("qemu-system-aarch64 is not installed")
    # QEMU accepts it: the kernel starts and prints its banner on the serial console
    # (it panics later for want of a root fs; the qemu target tests boot it fully).
    p = subprocess.Popen([qemu, "-M", "virt", "-cpu", "cortex-a57", "-m", "256", "-nographic",
                          "-no-reboot", "-kernel", str(image), "-append", "console=ttyAMA0 panic=-1"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    seen = b""
    try:
        deadline = time.monotonic() + 120
        while f"Linux version {release}".encode() not in seen and time.monotonic() < deadline:
            if select.select([p.stdout], [], [], 1)[0]:
                chunk = os.read(p.stdout.fileno(), 65536)
                if not chunk:
                    break
                seen += chunk
    finally:
        p.kill()
        p.wait()
    assert f"Linux version {release}".encode() in seen, seen[-2000:]


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_modules_are_the_virtio_set_with_all_dependencies(fetched, arch):
    image, _ = fetched(arch)
    _, mod_dir = _check_layout(image, "linux-image-")
    kos = {p.relative_to(mod_dir).as_posix(): p for p in mod_dir.rglob("*") if p.is_file()
           and p.name != "modules.dep"}
    assert all(k.endswith(".ko") for k in kos), "modules are stored decompressed"
    by_name = {}
    for rel, path in kos.items():
        data = path.read_bytes()
        assert data[:4] == b"\x7fELF"
        name = _module_field(data, "name")
        assert name == path.name[:-3].replace("-", "_"), (rel, name)
        by_name[name] = (rel, [d for d in (_module_field(data, "depends") or "").split(",") if d])

    for wanted in ("kernel/drivers/char/virtio_console.ko", "kernel/drivers/char/hw_random/virtio-rng.ko",
                   "kernel/drivers/virtio/virtio_pci.ko", "kernel/drivers/virtio/virtio_mmio.ko",
                   "kernel/net/vmw_vsock/vmw_vsock_virtio_transport.ko", "kernel/net/vmw_vsock/vsock.ko",
                   "kernel/drivers/net/virtio_net.ko"):
        assert wanted in kos, wanted
    # Debian builds the virtio core as modules for amd64 and into the kernel for arm64.
    config = (image.parent / "config").read_text().splitlines()
    core_modular = "CONFIG_VIRTIO=m" in config
    core = ["virtio", "virtio_ring"] if core_modular else []
    assert sorted(by_name["virtio_console"][1]) == core
    assert ("virtio" in by_name) == core_modular
    # Closed under depends=, and nothing outside the wanted set and its dependencies.
    needed = set()
    stack = [n for n, (rel, _) in by_name.items()
             if re.match(r"kernel/(drivers/virtio/|net/vmw_vsock/|drivers/char/virtio_console|"
                         r"drivers/char/hw_random/virtio-rng|drivers/net/virtio_net)", rel)]
    while stack:
        n = stack.pop()
        if n not in needed:
            needed.add(n)
            assert all(d in by_name for d in by_name[n][1]), (n, by_name[n][1])
            stack += by_name[n][1]
    assert needed == set(by_name)

    # modules.dep lists each module's dependencies, each one after every module needing it.
    dep = dict(line.split(":", 1) for line in (mod_dir / "modules.dep").read_text().splitlines())
    assert set(dep) == set(kos)
    chain = dep["kernel/drivers/char/virtio_console.ko"].split()
    assert chain == [f"kernel/drivers/virtio/{m}.ko" for m in core]
    if core_modular:
        # virtio_pci needs its transport helpers and the core: the core loads first.
        pci = dep["kernel/drivers/virtio/virtio_pci.ko"].split()
        assert pci[-2:] == ["kernel/drivers/virtio/virtio.ko", "kernel/drivers/virtio/virtio_ring.ko"]


def test_second_fetch_downloads_nothing(fetched):
    image, _ = fetched("x86_64")
    debs = sorted((fetched.cache / "debs").glob("linux-image-*_amd64.deb"))
    assert debs
    before = {p: p.stat().st_mtime_ns for p in [image, *debs]}
    lines: list[str] = []
    assert fetch("x86_64", False, fetched.dest, lines.append, cache=fetched.cache) == image
    assert any(ln.endswith("; nothing downloaded.") and "is already in" in ln for ln in lines), lines
    assert not any(ln.startswith(("Downloading", "Extracting")) for ln in lines), lines
    assert {p: p.stat().st_mtime_ns for p in before} == before


def test_a_kernel_fetched_with_fewer_modules_is_extracted_again(fetched):
    """A kernel fetched before virtio_net was wanted gets it from the cached package, in place."""
    image, _ = fetched("x86_64")
    [net] = image.parent.rglob("virtio_net.ko")
    net.unlink()
    (image.parent / "modules.wanted").write_text("drivers/virtio/*.ko*\n")
    lines: list[str] = []
    assert fetch("x86_64", False, fetched.dest, lines.append, cache=fetched.cache) == image
    assert any(ln.startswith("Extracting") for ln in lines), lines
    assert not any(ln.startswith("Downloading") for ln in lines), lines
    assert net.is_file() and not list(fetched.dest.glob(".fetch-*"))
    lines.clear()
    fetch("x86_64", False, fetched.dest, lines.append, cache=fetched.cache)
    assert not any(ln.startswith("Extracting") for ln in lines), lines


def test_newer_version_replaces_the_symlink(fetched):
    image, _ = fetched("x86_64")
    old = fetched.dest / "linux-image-6.1.0-1-amd64_6.1.4-1"     # as left by an earlier fetch
    (old / "modules").mkdir(parents=True, exist_ok=True)
    (old / "vmlinuz").write_bytes(b"old")
    link = fetched.dest / "x86_64"
    link.unlink()
    link.symlink_to(old.name)
    lines: list[str] = []
    fetch("x86_64", False, fetched.dest, lines.append, cache=fetched.cache)
    assert os.readlink(link) == image.parent.name
    assert f"{link} -> {image.parent.name} (was {old.name})." in lines
    assert (old / "vmlinuz").read_bytes() == b"old"     # campaigns pinned to it keep working


def test_cli_fetch_reuses_the_kernel(fetched, tmp_path):
    image, _ = fetched("x86_64", True)
    # A relative --cache: apt's private directories must not depend on where apt runs.
    r = run_cli("kernel", "fetch", "--arch", "x86_64", "--rt", "--dest", str(fetched.dest),
                "--cache", os.path.relpath(fetched.cache, tmp_path), cwd=tmp_path, env=cli_env())
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"Kernel: {fetched.dest / 'x86_64-rt' / 'vmlinuz'} ({image})\n"
    assert "nothing downloaded" in r.stderr and "Downloading" not in r.stderr


def test_cli_bad_arch_exits_2(tmp_path):
    r = run_cli("kernel", "fetch", "--arch", "riscv64", cwd=tmp_path, env=cli_env())
    assert r.returncode == 2
    assert r.stderr == "rtvbench: unknown kernel architecture 'riscv64'; use --arch x86_64 or --arch aarch64.\n"
    assert r.stdout == "" and not (tmp_path / "kernels").exists()


def test_cli_dest_that_is_a_file_exits_2(tmp_path):
    (tmp_path / "kernels").write_text("")
    r = run_cli("kernel", "fetch", "--arch", "aarch64", cwd=tmp_path, env=cli_env())
    assert r.returncode == 2
    assert "kernel destination kernels is not a directory; choose another with --dest." in r.stderr


def _fake_tool(bindir: Path, name: str, script: str) -> None:
    bindir.mkdir(exist_ok=True)
    (bindir / name).write_text("#!/bin/sh\n" + script)
    (bindir / name).chmod(0o755)


def test_cli_apt_failure_exits_3(tmp_path):
    # An apt that cannot reach any mirror, and has no lists from before.
    bindir = tmp_path / "bin"
    _fake_tool(bindir, "apt-get", 'echo "E: Failed to fetch http://mirror.invalid/dists/bookworm/InRelease" >&2\n'
                                  "exit 100\n")
    _fake_tool(bindir, "apt-cache", 'echo "E: No packages found" >&2\nexit 100\n')
    env = cli_env(PATH=f"{bindir}:{os.environ['PATH']}")
    r = run_cli("kernel", "fetch", "--arch", "x86_64", cwd=tmp_path, env=env)
    assert r.returncode == 3, r.stderr
    assert ("rtvbench: apt-get update for amd64 failed (E: Failed to fetch "
            "http://mirror.invalid/dists/bookworm/InRelease); check the network and "
            "/etc/apt/sources.list*, then retry.\n") in r.stderr
    assert "Traceback" not in r.stderr


def test_failed_extraction_leaves_nothing_behind(fetched, tmp_path):
    fetched("x86_64")                       # the package is in the shared cache
    bindir = tmp_path / "bin"
    _fake_tool(bindir, "dpkg-deb", 'mkdir -p "$3/boot" && echo "dpkg-deb: error: disk full" >&2\nexit 2\n')
    dest = tmp_path / "k"
    r = run_cli("kernel", "fetch", "--arch", "x86_64", "--dest", str(dest), "--cache", str(fetched.cache),
                cwd=tmp_path, env=cli_env(PATH=f"{bindir}:{os.environ['PATH']}"))
    assert r.returncode == 3, r.stderr
    assert "dpkg-deb cannot extract" in r.stderr and "disk full" in r.stderr
    assert "Using the cached linux-image-" in r.stderr      # no second download either
    assert sorted(p.name for p in dest.iterdir()) == []


def test_prune_keeps_other_flavours(tmp_path):
    names = ["linux-image-6.1.0-55-amd64_6.1.180-1_amd64.deb", "linux-image-6.1.0-56-amd64_6.1.192-2_amd64.deb",
             "linux-image-6.1.0-55-rt-amd64_6.1.180-1_amd64.deb", "linux-image-6.1.0-56-rt-amd64_6.1.192-2_amd64.deb",
             "linux-image-6.12.43+deb13-amd64_6.12.43-1_amd64.deb", "linux-image-6.1.0-55-arm64_6.1.180-1_arm64.deb"]
    for n in names:
        (tmp_path / n).write_bytes(b"")
    _prune(tmp_path, "amd64", keep=tmp_path / names[1])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names[1:4] + names[5:])
    _prune(tmp_path, "rt-amd64", keep=tmp_path / names[3])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([names[1], names[3], names[5]])
