"""The probe's core (probe/core/: histogram, JSON records, number formatting) compiled freestanding prints
the same bytes as the Linux probe's build of it, and calls nothing of libc but what the compiler emits.

hist-dump (probe/tests/hist_dump.c) records a fixed set of samples and prints their result record; it
is linked once with the Linux output side and once with the core's freestanding objects and a small
buffer that is written out whenever it fills. Its figures are checked against Python's own arithmetic
on the same samples, so the two agreeing is not two wrongs agreeing."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BUILD = REPO / "build" / "probe"
# What GCC may emit calls to even in freestanding code; the bare-metal image supplies these.
COMPILER_EMITTED = {"memcpy", "memset", "strlen"}

pytestmark = pytest.mark.functional


def _samples():
    state, mask = 0x9E3779B97F4A7C15, (1 << 64) - 1
    for i in range(100000):
        state ^= state >> 12
        state = (state ^ (state << 25)) & mask
        state ^= state >> 27
        r = (state * 2685821657736338717) & mask
        v = 15000 + r % 3000
        if i % 97 == 0:
            v += (r >> 20) % 2000000
        yield v


@pytest.fixture(scope="module")
def dumps(probe):
    names = ("hist-dump-linux", "hist-dump-freestanding")
    subprocess.run(["make", "-s", "-C", str(REPO)] + [f"build/probe/{n}" for n in names], check=True)
    return [subprocess.run([str(BUILD / n)], capture_output=True, check=True, timeout=60).stdout for n in names]


def test_freestanding_core_prints_the_linux_builds_bytes(dumps):
    linux, freestanding = dumps
    assert len(linux) > 4096          # longer than the freestanding sink: written in pieces
    assert freestanding == linux


def test_the_figures_are_the_samples_own(dumps):
    result, doubles = (json.loads(line) for line in dumps[1].splitlines())
    values = list(_samples())
    n = len(values)
    mean = sum(values) / n
    sumsq = math.fsum(float(v) * float(v) for v in values)
    assert result["count"] == n == sum(b[2] for b in result["histogram"]["buckets"])
    assert (result["min_ns"], result["max_ns"]) == (min(values), max(values))
    assert result["avg_ns"] == float(f"{mean:.10g}")
    assert result["stddev_ns"] == pytest.approx(math.sqrt(sumsq / n - mean * mean), rel=1e-9)
    assert doubles["values"] == [0, -0.0, 1e-07, 0.1, 0.6666666667, 123456.5, 1.23456789e+10, 1e+300,
                                 4.940656458e-324]
    assert doubles["int_min"] == -2**63


def test_the_freestanding_objects_call_no_libc(probe):
    subprocess.run(["make", "-s", "-C", str(REPO), "build/probe/hist-dump-freestanding"], check=True)
    objects = sorted((BUILD / "freestanding").glob("*.o"))
    assert {o.stem for o in objects} >= {"hist", "jsonw", "numfmt", "core_sqrt"}
    defined, undefined = set(), set()
    for o in objects:
        out = subprocess.run(["nm", str(o)], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            kind, name = line.split()[-2:]
            (undefined if kind == "U" else defined).add(name)
    platform = {"jw_make_room", "jw_write"}
    assert undefined - defined - platform <= COMPILER_EMITTED, undefined - defined - platform
