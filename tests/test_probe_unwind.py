"""The probe is built without unwind tables for its own code (-fno-asynchronous-unwind-tables, see
the Makefile), which is sound only while nothing unwinds through its frames. In glibc, what unwinds
is thread cancellation and pthread_exit (a forced unwind, which would abort in a frame without
tables) and backtrace; none of them may be linked into the static probe at all."""

from __future__ import annotations

import shutil
import subprocess

import pytest

pytestmark = pytest.mark.functional

UNWINDERS = {"pthread_cancel", "pthread_exit", "backtrace", "__backtrace"}
NM = {"aarch64": "aarch64-linux-gnu-nm", "armhf": "arm-linux-gnueabihf-nm", "riscv64": "riscv64-linux-gnu-nm"}


def _defined(nm: str, path) -> set[str]:
    out = subprocess.run([nm, "--defined-only", str(path)], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def test_native_probe_links_nothing_that_unwinds(probe):
    names = _defined("nm", probe)
    assert "main" in names, "the probe is stripped: the check would see nothing"
    assert not names & UNWINDERS, names & UNWINDERS


@pytest.mark.parametrize("arch", sorted(NM))
def test_cross_probes_link_nothing_that_unwind(cross_probes, arch):
    if not shutil.which(NM[arch]):
        pytest.skip(f"{NM[arch]} is not installed")
    names = _defined(NM[arch], cross_probes[arch])
    assert "main" in names
    assert not names & UNWINDERS, names & UNWINDERS
