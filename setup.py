"""The build steps that put the static probes into the wheel (rtvbench/probes/<arch>/rtvb-probe),
so that an installed rtvbench measures without a source checkout, and its manual page beside it
(share/man/man1/rtvbench.1, written from the Click commands by rtvbench/manpage.py). Everything
else about the package is in pyproject.toml."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
ONLY = "RTVBENCH_WHEEL_PROBES"
# arch -> the compiler of the Makefile's build/probe/<arch>/rtvb-probe rule (CROSS_<arch>), and
# Debian's packages that bring it with the static libc it links.
CROSS = {
    "x86_64": ("x86_64-linux-gnu-gcc", "gcc-x86-64-linux-gnu libc6-dev-amd64-cross"),
    "aarch64": ("aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu libc6-dev-arm64-cross"),
    "armhf": ("arm-linux-gnueabihf-gcc", "gcc-arm-linux-gnueabihf libc6-dev-armhf-cross"),
    "riscv64": ("riscv64-linux-gnu-gcc", "gcc-riscv64-linux-gnu libc6-dev-riscv64-cross"),
}
# This machine's own architecture is built by `make probe` with cc: a checkout has usually built
# it already (scripts/setup.sh does), and make then only checks that it is up to date.
NATIVE = {"x86_64": "x86_64", "aarch64": "aarch64", "armv7l": "armhf",
          "riscv64": "riscv64"}.get(platform.machine())


def _arches() -> list[str]:
    wanted = os.environ.get(ONLY)
    if wanted is None:
        return list(CROSS)
    arches = wanted.replace(",", " ").split()
    unknown = sorted(set(arches) - set(CROSS))
    if unknown:
        raise SystemExit(f"{ONLY}={wanted!r} names no probe build {', '.join(unknown)}; "
                         f"the builds are {', '.join(CROSS)}.")
    return arches


def _how(arch: str) -> tuple[str, str, str]:
    """(make target, compiler, Debian packages) of one architecture's probe."""
    if arch == NATIVE:
        return "probe", os.environ.get("CC", "cc"), "build-essential"
    compiler, packages = CROSS[arch]
    return f"build/probe/{arch}/rtvb-probe", compiler, packages


def _can_link_static(compiler: str) -> bool:
    if shutil.which(compiler) is None:
        return False
    # gcc prints the bare name back when it has no such file: the static libc is not installed.
    found = subprocess.run([compiler, "-print-file-name=libc.a"], capture_output=True, text=True)
    return os.path.isabs(found.stdout.strip())


def build_probes(arches: list[str]) -> dict[str, Path]:
    """arch -> its static rtvb-probe, built by make in the source tree's build/probe/."""
    if not arches:
        return {}
    if shutil.which("make") is None:
        raise SystemExit("building the rtvbench wheel needs make (apt-get install make).")
    missing = [(arch, *_how(arch)[1:]) for arch in arches if not _can_link_static(_how(arch)[1])]
    if missing:
        what = "; ".join(f"{compiler} with its static libc for the {arch} probe "
                         f"(apt-get install {packages})" for arch, compiler, packages in missing)
        raise SystemExit(f"building the rtvbench wheel needs {what}; scripts/setup.sh installs "
                         f"them all, or set {ONLY} to the architectures to build "
                         f"(of {', '.join(CROSS)}).")
    targets = [_how(arch)[0] for arch in arches]
    subprocess.run(["make", "-C", str(HERE), *targets], check=True)
    return {arch: HERE / ("build/probe/rtvb-probe" if target == "probe" else target)
            for arch, target in zip(arches, targets)}


# Relative to this directory, as data_files wants it; build/ is left out of an sdist. A wheel
# installs it as <prefix>/share/man/man1/rtvbench.1, where man finds it beside <prefix>/bin.
MAN_PAGE = "build/man/rtvbench.1"
DATA_FILES = [("share/man/man1", [MAN_PAGE])]


def build_man_page(release: str) -> Path:
    """rtvbench.1, from the command definitions of the sources beside this file (not of an
    rtvbench installed in the build environment)."""
    page = HERE / MAN_PAGE
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])))
    subprocess.run([sys.executable, "-m", "rtvbench.manpage", str(page), release], check=True, env=env, cwd=HERE)
    return page


class BuildWithProbes(build_py):
    def run(self) -> None:
        # build/lib is reused from one build to the next: a module since removed or moved into a
        # package of the same name would otherwise still be copied into the wheel.
        if not self.editable_mode:
            shutil.rmtree(Path(self.build_lib) / "rtvbench", ignore_errors=True)
        super().run()
        # Before install_data copies it, in an editable install too (which installs data files).
        build_man_page(self.distribution.get_version())
        # An editable install runs from the checkout, whose probes are in build/probe/ already.
        if self.editable_mode:
            return
        for arch, built in build_probes(_arches()).items():
            dest = Path(self.build_lib) / "rtvbench" / "probes" / arch / "rtvb-probe"
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(built, dest)        # with its executable bits, which the wheel keeps


# Imported by tests/test_wheel_build.py for its checks, which build nothing.
if __name__ == "__main__":
    setup(cmdclass={"build_py": BuildWithProbes}, data_files=DATA_FILES)
