"""Cache-level detection on synthetic latency curves whose plateaus are known.

Each curve is sampled at the probe's default sweep points (512 B .. 256 MiB, every power of
two and 1.5x power of two). The detector must find exactly the levels put in, with their
latency within 10 % and their size within one sweep step of the truth.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from rtvbench.analysis.cache_levels import Level, detect_levels, levels_sentence

KiB, MiB = 1 << 10, 1 << 20


def sweep(lo: int = 512, hi: int = 256 * MiB) -> list[int]:
    out, p = [], 1
    while p <= hi:
        for s in (p, p * 3 // 2):
            if lo <= s <= hi and s not in out:
                out.append(s)
        p *= 2
    return sorted(out)


SIZES = sweep()


def staircase(levels: list[tuple[float, int | None]]) -> list[float]:
    """Latency per sweep size: level k holds every size up to its limit (the last: all the rest)."""
    out = []
    for s in SIZES:
        out.append(next(lat for lat, limit in levels if limit is None or s <= limit))
    return out


def smooth(levels: list[tuple[float, int | None]], width_octaves: float = 0.6) -> list[float]:
    """Log-latency rises along a logistic step centred half an octave above each limit."""
    out = []
    for s in SIZES:
        y = math.log(levels[0][0])
        for (a, limit), (b, _) in zip(levels, levels[1:]):
            x = (math.log2(s) - math.log2(limit) - 0.5) / (width_octaves / 4)
            y += (math.log(b) - math.log(a)) / (1 + math.exp(-x))
        out.append(math.exp(y))
    return out


def check(found: list[Level], levels: list[tuple[float, int | None]]) -> None:
    assert [lv.name for lv in found] == [f"L{i + 1}" for i in range(len(levels) - 1)] + ["DRAM"], found
    for lv, (lat, limit) in zip(found, levels):
        assert lv.latency_ns == pytest.approx(lat, rel=0.10), (lv, lat)
        if limit is not None:
            assert abs(SIZES.index(lv.last_size) - SIZES.index(limit)) <= 1, (lv, human(limit))


def human(n: int) -> str:
    return f"{n / KiB:g} KiB"


TWO = [(1.5, 32 * KiB), (80.0, None)]
THREE = [(1.2, 32 * KiB), (5.0, 1 * MiB), (100.0, None)]
FOUR = [(1.2, 48 * KiB), (4.0, 2 * MiB), (15.0, 24 * MiB), (90.0, None)]


@pytest.mark.parametrize("levels", [TWO, THREE, FOUR], ids=["2 levels", "3 levels", "4 levels"])
def test_clean_staircases(levels):
    check(detect_levels(zip(SIZES, staircase(levels))), levels)


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("levels", [THREE, FOUR], ids=["3 levels", "4 levels"])
def test_noisy_curves_with_spikes(levels, seed):
    """5 % log-normal noise on every point, and two isolated spikes of 1.6-2.5x anywhere, even
    next to a step. (Two spikes side by side at the end of a level would look exactly like a
    transition, so they are kept apart.)"""
    rng = np.random.default_rng(seed)
    lat = np.array(staircase(levels)) * rng.lognormal(0, 0.05, len(SIZES))
    first = int(rng.integers(len(SIZES)))
    second = (first + int(rng.integers(3, len(SIZES) - 2))) % len(SIZES)
    for i in (first, second):
        lat[i] *= rng.uniform(1.6, 2.5)
    check(detect_levels(zip(SIZES, lat)), levels)


@pytest.mark.parametrize("seed", range(10))
def test_smooth_transitions(seed):
    """Each rise takes about an octave (two or three sweep points in between), plus noise."""
    rng = np.random.default_rng(100 + seed)
    lat = np.array(smooth(FOUR)) * rng.lognormal(0, 0.03, len(SIZES))
    check(detect_levels(zip(SIZES, lat)), FOUR)


def test_monotone_drift_with_a_bump_before_a_level():
    """Latency creeps up inside the levels (an L3 drifting 12 -> 17 ns, as a shared L3 does),
    and overshoots for two points at the L2 -> L3 boundary before the prefetcher catches up."""
    lat = []
    for s in SIZES:
        if s <= 32 * KiB:
            v = 1.23
        elif s <= 256 * KiB:
            v = 3.7
        elif s <= 512 * KiB:
            v = {384 * KiB: 4.9, 512 * KiB: 6.9}[s]            # the L1 TLB's reach runs out
        elif s <= 1 * MiB:
            v = {768 * KiB: 24.0, 1 * MiB: 21.0}[s]            # the bump
        elif s <= 6 * MiB:
            v = 12 * (17 / 12) ** (math.log2(s / (1.5 * MiB)) / 2)   # 12 -> 17 ns over 1.5..6 MiB
        elif s <= 8 * MiB:
            v = 60.0
        else:
            v = 150.0 * (1 + 0.02 * math.log2(s / (12 * MiB)))       # page walks grow slowly
        lat.append(v)
    found = detect_levels(zip(SIZES, lat))
    assert [lv.name for lv in found] == ["L1", "L2", "L3", "DRAM"], found
    assert found[0].latency_ns == pytest.approx(1.23) and found[0].last_size == 32 * KiB
    assert found[1].latency_ns == pytest.approx(3.7, rel=0.1)
    assert found[1].last_size in (256 * KiB, 384 * KiB)
    assert 12 <= found[2].latency_ns <= 17 and found[2].first_size in (1 * MiB, 1536 * KiB)
    assert found[2].last_size == 6 * MiB
    assert 150 <= found[3].latency_ns <= 170 and found[3].first_size == 12 * MiB


def test_a_bulge_one_octave_wide_is_not_a_level():
    """Three points (an octave) above the next plateau: a bulge, dropped, not an extra level."""
    lat = staircase(THREE)
    for s in (1536 * KiB, 2 * MiB, 3 * MiB):
        lat[SIZES.index(s)] = 160.0
    check(detect_levels(zip(SIZES, lat)), THREE)


def test_a_shoulder_inside_a_transition_is_not_a_level():
    """Two close points (30 and 36 ns, half an octave) on the way from L2 to DRAM: a step of the
    transition, not a cache, because a level covers at least a doubling of the working set."""
    lat = staircase(THREE)
    lat[SIZES.index(1536 * KiB)], lat[SIZES.index(2 * MiB)] = 30.0, 36.0
    check(detect_levels(zip(SIZES, lat)), THREE)


def test_coarse_sweep_of_the_quick_mode():
    """--quick sweeps 1K .. 64M in powers of four: two points per level are enough at the ends."""
    sizes = [1 * KiB << (2 * i) for i in range(9)]
    lat = [1.3, 1.3, 1.4, 4.5, 4.2, 16.0, 18.0, 95.0, 110.0]
    found = detect_levels(zip(sizes, lat))
    assert [(lv.name, lv.last_size) for lv in found] == [
        ("L1", 16 * KiB), ("L2", 256 * KiB), ("L3", 4 * MiB), ("DRAM", 64 * MiB)]


def test_flat_and_degenerate_curves():
    assert detect_levels([]) == []
    assert detect_levels([(4096, 1.0)]) == []
    flat = detect_levels((s, 1.3) for s in SIZES[:12])
    assert len(flat) == 1 and flat[0].first_size == 512 and flat[0].last_size == SIZES[11]
    assert "no level boundary" in levels_sentence(flat)
    # nonsense points are ignored, repeated sizes reduced to their median
    pts = [(s, v) for s, v in zip(SIZES, staircase(THREE))] + [(4096, None), (8192, -1.0), (0, 3.0),
                                                                (4096, 1.2), (4096, 50.0)]
    check(detect_levels(pts), THREE)


def test_sentence_names_levels_sizes_and_latencies():
    found = detect_levels(zip(SIZES, staircase(FOUR)))
    assert levels_sentence(found) == ("~1.2 ns up to 48 KiB (L1), ~4 ns up to 2 MiB (L2), "
                                      "~15 ns up to 24 MiB (L3), DRAM ~90 ns (from 32 MiB)")
