"""Where the probe binary is: this machine's, or the build for a target's architecture.

A source checkout's build comes first, then the static probes an installed wheel carries, then
PATH; an environment variable names another binary explicitly.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

from rtvbench.errors import TargetError

# <repo>/build/probe/rtvb-probe, where `make probe` puts it, for a source checkout.
_BUILT = Path(__file__).resolve().parents[2] / "build" / "probe" / "rtvb-probe"
# <package>/probes/<build>/rtvb-probe: the static probes an installed wheel carries (setup.py).
# They come after the checkout's build, which is what a developer has just compiled from the sources
# beside this file (an editable install has no packaged probes anyway), and before PATH, because
# they were built from the same sources as this rtvbench while one on PATH may be any version.
PACKAGED = Path(__file__).resolve().parents[1] / "probes"


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _packaged(build: str | None) -> Path | None:
    path = PACKAGED / str(build) / "rtvb-probe"
    return path if build is not None and _executable(path) else None


def locate_probe() -> Path:
    """The native probe binary: $RTVBENCH_PROBE, the source tree's build, the installed package's,
    or PATH."""
    env = os.environ.get("RTVBENCH_PROBE")
    if env:
        path = Path(env)
        if not _executable(path):
            raise TargetError(f"RTVBENCH_PROBE={env} is not an executable file: "
                              "point it at a built rtvb-probe or unset it.")
        return path
    if _executable(_BUILT):
        return _BUILT
    packaged = _packaged(ARCH_BUILDS.get(platform.machine()))
    if packaged is not None:
        return packaged
    import shutil       # here: a probe on PATH is the last resort, and validate imports this module
    found = shutil.which("rtvb-probe")
    if found:
        return Path(found)
    raise TargetError("rtvb-probe not found: build it with `make probe` in a source checkout, "
                      f"install rtvbench from a wheel that carries the {platform.machine()} probe, "
                      "or set RTVBENCH_PROBE to its path.")


# `uname -m` -> the directory of build/probe/ holding the matching static probe (Makefile:
# probe-cross). The armhf build targets ARMv7 (Debian's arm-linux-gnueabihf default), which also
# runs in a 32-bit userland on ARMv8 (armv8l); ARMv6 boards have no build.
ARCH_BUILDS = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64",
               "armv7l": "armhf", "armv8l": "armhf", "riscv64": "riscv64"}
CROSS_BUILDS = ("aarch64", "armhf", "riscv64")      # what `make probe-cross` builds
BUILD_DIR = _BUILT.parent


def probe_for_arch(arch: str) -> Path:
    """The probe binary for a machine whose `uname -m` is arch: this machine's own when the
    architecture is the same, else the `make probe-cross` build; $RTVBENCH_PROBE_<BUILD> wins."""
    build = ARCH_BUILDS.get(arch)
    if build is None:
        raise TargetError(f"there is no probe build for the target's architecture {arch!r} "
                          f"(builds: x86_64, aarch64, armhf for ARMv7 and later, riscv64); "
                          "measure it with another target, or build rtvb-probe for it by hand.")
    env = os.environ.get(f"RTVBENCH_PROBE_{build.upper()}")
    if env:
        path = Path(env)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise TargetError(f"RTVBENCH_PROBE_{build.upper()}={env} is not an executable file: "
                              "point it at a built rtvb-probe or unset it.")
        return path
    if ARCH_BUILDS.get(platform.machine()) == build:
        return locate_probe()           # the target runs what this machine runs
    path = BUILD_DIR / build / "rtvb-probe"
    if path.is_file():
        return path
    packaged = _packaged(build)
    if packaged is not None:
        return packaged
    how = ("run `make probe-cross` in a source checkout to build it, or set "
           f"RTVBENCH_PROBE_{build.upper()} to a {build} rtvb-probe" if build in CROSS_BUILDS else
           f"build it with `make probe` on a {build} machine and set RTVBENCH_PROBE_{build.upper()} "
           "to it")
    raise TargetError(f"no probe built for {build} (the target's `uname -m` is {arch}) at "
                      f"{path}, nor one installed with rtvbench at {PACKAGED / build}: {how}.")
