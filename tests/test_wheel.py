"""rtvbench installed from its wheel, without a checkout: the wheel carries a static probe for each
architecture (setup.py), and the installed rtvbench measures with its own one, from a directory
outside the checkout, with no RTVBENCH_PROBE, compiler or make on PATH.

The fresh environment gets rtvbench only from the wheel; its dependencies come from the test's own
environment through a .pth file, so that installing needs no package index. Building does: pip's
isolated build environment gets setuptools from the index (or pip's cache), as a user's build would."""

from __future__ import annotations

import os
import platform
import shutil
import struct
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

import pytest

from host_helpers import install_wheel
from rtvbench.probe.binary import ARCH_BUILDS
from rtvbench.store import load_run, open_store

pytestmark = pytest.mark.functional

REPO = Path(__file__).resolve().parent.parent
# The wheel's builds and the ELF e_machine each must have.
MACHINES = {"x86_64": 62, "aarch64": 183, "armhf": 40, "riscv64": 243}
PT_INTERP, PT_DYNAMIC = 3, 2

# One short measurement: what is measured does not matter here, only which probe measures it.
CAMPAIGN = '''
name = "from-the-wheel"
repetitions = 1
[environments.here]
target = "local"
[benchmarks.wakeup]
kind = "latency"
duration_s = 0.3
policy = "other"
'''


def _program_headers(elf: bytes) -> list[int]:
    """The p_type of each program header of a little-endian ELF file."""
    wide = elf[4] == 2                                  # EI_CLASS: ELFCLASS64
    assert elf[5] == 1, "big-endian"                    # EI_DATA: every build here is little-endian
    if wide:
        phoff, = struct.unpack_from("<Q", elf, 32)
        phentsize, phnum = struct.unpack_from("<HH", elf, 54)
    else:
        phoff, = struct.unpack_from("<I", elf, 28)
        phentsize, phnum = struct.unpack_from("<HH", elf, 42)
    return [struct.unpack_from("<I", elf, phoff + i * phentsize)[0] for i in range(phnum)]


def _check_probes(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        probes = {name.split("/")[2]: zf.getinfo(name) for name in zf.namelist()
                  if name.startswith("rtvbench/probes/")}
        assert sorted(probes) == sorted(MACHINES)
        for arch, info in probes.items():
            assert info.filename == f"rtvbench/probes/{arch}/rtvb-probe"
            assert (info.external_attr >> 16) & 0o111 == 0o111, f"{arch}: not executable"
            elf = zf.read(info)
            assert elf[:4] == b"\x7fELF", arch
            assert struct.unpack_from("<H", elf, 18)[0] == MACHINES[arch], arch
            headers = _program_headers(elf)
            assert headers and PT_INTERP not in headers and PT_DYNAMIC not in headers, \
                f"{arch}: not statically linked"


@pytest.mark.probe
def test_the_installed_wheel_measures_with_its_own_probe(tmp_path):
    started = time.monotonic()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RTVBENCH_")}
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "-w",
                            str(tmp_path / "dist"), str(REPO)], env=env, capture_output=True,
                           text=True, timeout=240)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert "Deprecat" not in built.stdout + built.stderr
    [wheel] = (tmp_path / "dist").glob("rtvbench-*.whl")
    _check_probes(wheel)

    venv = tmp_path / "venv"
    install_wheel(wheel, venv, env)
    # Only after the install, so that pip saw no other rtvbench; the venv's own site-packages come
    # first on sys.path, and a .pth line adds no editable finder of the test environment's.
    [site] = (venv / "lib").glob("python3*/site-packages")
    (site / "test-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    away = tmp_path / "elsewhere"
    away.mkdir()
    (away / "c.toml").write_text(CAMPAIGN)
    bare = {"PATH": str(venv / "bin"), "HOME": str(tmp_path), "MPLCONFIGDIR": str(tmp_path / "mpl"),
            "LANG": "C.UTF-8"}
    for tool in ("cc", "gcc", "make", "rtvb-probe"):
        assert shutil.which(tool, path=bare["PATH"]) is None, tool
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c",
         "import rtvbench, rtvbench.probe.binary as p\n"
         "print(rtvbench.__file__)\n"
         "for arch in ('x86_64', 'aarch64', 'armv7l', 'riscv64'): print(p.probe_for_arch(arch))"],
        cwd=away, env=bare, capture_output=True, text=True, timeout=60)
    assert where.returncode == 0, where.stderr
    package = site / "rtvbench"
    assert where.stdout.split() == [str(package / "__init__.py")] + [
        str(package / "probes" / arch / "rtvb-probe") for arch in ("x86_64", "aarch64", "armhf", "riscv64")]

    r = subprocess.run([str(venv / "bin" / "rtvbench"), "run", "c.toml", "--store", "sqlite:///s.db"],
                       cwd=away, env=bare, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    [m] = load_run(open_store(f"sqlite:///{away / 's.db'}"), 1).measurements
    assert m.status == "ok", m.error
    assert m.command[0] == str(package / "probes" / ARCH_BUILDS[platform.machine()] / "rtvb-probe")
    print(f"wheel {wheel.stat().st_size} bytes; built, installed and run in "
          f"{time.monotonic() - started:.1f} s")
