"""The probe's C unit tests (probe/tests/test_*.c, `make probe-test`), one test each, so that they run
in the phase their checks belong to and are counted with the rest.

Most check pure functions (the histogram, option parsing, number parsing, the trace clock offset):
functional. Two time operations of known cost (busy waits, a 1 ms sleep) through the probe's timing
harness, so a preempted busy wait on a busy machine can move their figures: those measure."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
MEASURING = {"derive", "timing"}
NAMES = sorted(p.stem[len("test_"):] for p in (REPO / "probe" / "tests").glob("test_*.c"))


@pytest.mark.parametrize("name", [pytest.param(n, marks=() if n in MEASURING else pytest.mark.functional)
                                  for n in NAMES])
def test_probe_c_unit(name, probe):
    binary = f"build/probe/test-{name}"
    subprocess.run(["make", "-s", "-C", str(REPO), binary], check=True)
    r = subprocess.run([str(REPO / binary)], capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "FAIL" not in r.stdout + r.stderr, r.stdout + r.stderr
