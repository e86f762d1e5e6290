"""Cache-level detection on synthetic latency curves whose plateaus are known.

Each curve is sampled at the probe's default sweep points (512 B .. 256 MiB, every power of
two and 1.5x power of two). The detector must find exactly the levels put in, with their
latency within 10 % and their size within one sweep step of the truth.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from rtvbench.analysis.cache_levels import Level, detect_levels, levels_sentence, reported_caches

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


# -- named against the caches the machine reports ------------------------------------------------

FIXTURE = Path(__file__).parent / "fixtures" / "memlat-random-x86-vm.json"


def test_a_recorded_curve_is_named_and_checked_against_its_reported_caches():
    doc = json.loads(FIXTURE.read_text())
    reported = reported_caches(doc["caches"])
    assert reported == {1: 32 * KiB, 2: 512 * KiB, 3: 32 * MiB}          # the instruction cache is left out
    found = detect_levels(doc["points"], reported)
    assert [lv.name for lv in found] == ["L1", "L2", "L3", "DRAM"], found
    l1, l2, l3, dram = found
    assert l1.reported_size == 32 * KiB and l1.latency_ns == pytest.approx(1.23, rel=0.05)
    assert l2.reported_size == 512 * KiB and l2.latency_ns == pytest.approx(3.75, rel=0.05)
    # This VM's share of the EPYC's L3 ends near 6 MiB, not at the 32 MiB sysfs reports: said, not hidden.
    assert l3.unmatched and l3.reported_size is None and 12 <= l3.latency_ns <= 22
    assert dram.first_size == 32 * MiB and 100 <= dram.latency_ns <= 160
    text = levels_sentence(found, reported)
    assert "(L1, 32 KiB reported)" in text and "(L3, no reported cache ends near it)" in text


def cortex_a72_shape() -> list[tuple[int, float]]:
    """Not a recording: a curve constructed to the shape measured on a Cortex-A72 board (32 KiB L1d,
    1 MiB shared L2, no L3), an L1 near 1.9 ns, an L2 near 4.9 ns up to 768 KiB, and main memory from
    138 ns at 1.5 MiB growing with TLB misses to 208 ns at 64 MiB; 2 % noise."""
    rng = np.random.default_rng(72)
    out = []
    for s in sweep(512, 64 * MiB):
        if s <= 32 * KiB:
            lat = 1.9
        elif s == 48 * KiB:
            lat = 3.6
        elif s <= 768 * KiB:
            lat = 4.9
        elif s == 1 * MiB:
            lat = 40.0
        else:
            lat = 138 + (208 - 138) * math.log2(s / (1.5 * MiB)) / math.log2(64 / 1.5)
        out.append((s, lat * rng.lognormal(0, 0.02)))
    return out


@pytest.mark.parametrize("reported", [{1: 32 * KiB, 2: 1 * MiB}, {}], ids=["sizes reported", "no sizes"])
def test_dram_is_main_memory_not_the_fast_plateau_before_it(reported):
    found = detect_levels(cortex_a72_shape(), reported)
    names = [lv.name for lv in found]
    assert names == ["L1", "L2", "DRAM"], found
    dram = found[-1]
    assert 138 <= dram.latency_ns <= 208 and dram.first_size >= 1 * MiB, dram
    assert found[1].latency_ns == pytest.approx(4.9, rel=0.05)
    text = levels_sentence(found, reported)
    assert "DRAM ~4.9" not in text and f"DRAM ~{dram.latency_ns:.0f} ns" in text
    if reported:
        assert found[0].reported_size == 32 * KiB and found[1].reported_size == 1 * MiB
    else:
        assert "the machine reports no cache sizes" in text


def test_a_rise_that_never_settles_is_not_called_dram_and_every_plateau_before_it_a_cache():
    """Without reported sizes, a fast last plateau followed by sizes far slower that never level off
    (the shape once read as 'DRAM ~4.9 ns from 64 KiB') is said as a rise; with the sizes reported,
    what does not fit in the last-level cache is DRAM, even a single size of a sparse sweep."""
    quick = [4 ** k * KiB for k in range(9)]                   # 1 KiB .. 64 MiB, the probe's quick sweep
    lat = [1.9, 1.9, 1.9, 4.9, 4.9, 60.0, 120.0, 190.0, 300.0]
    found = detect_levels(zip(quick, lat))
    assert [lv.name for lv in found] == ["L1", "L2", "rise"] and not found[-1].settled, found
    assert found[-1].first_size == 1 * MiB and found[-1].latency_ns == pytest.approx(300.0)
    assert levels_sentence(found) == ("~1.9 ns up to 16 KiB (L1), ~4.9 ns up to 256 KiB (L2), then rising "
                                      "without a plateau from 1 MiB to ~300 ns at 64 MiB")
    found = detect_levels(zip(quick, lat), {1: 32 * KiB, 2: 1 * MiB, 3: 8 * MiB})
    assert [lv.name for lv in found] == ["L1", "L2", "DRAM"], found
    assert found[-1].first_size == 16 * MiB and 190 <= found[-1].latency_ns <= 300


def test_a_sparse_recorded_sweep_names_only_what_the_reported_caches_support():
    doc = json.loads(FIXTURE.read_text())
    points = [p for p in doc["points"] if p[0] in (2 * KiB, 16 * KiB, 256 * KiB, 1 * MiB, 8 * MiB, 64 * MiB)]
    found = detect_levels(points, reported_caches(doc["caches"]))
    assert found[0].name == "L1" and found[-1].name == "DRAM" and found[-1].first_size == 64 * MiB, found
    assert all(lv.latency_ns < 30 for lv in found[:-1]) and found[-1].latency_ns > 100


def test_a_sequential_chain_gets_no_level_names():
    """Prefetchers follow a sequential chain: its steps ('L1 up to 192 KiB' on a 32 KiB L1d) are theirs."""
    from types import SimpleNamespace

    from rtvbench.kinds.mem_lat import decode as mem_lat
    seq = {s: (1.0 if s <= 192 * KiB else 2.5) for s in SIZES[:30]}
    rnd = dict(zip(SIZES[:30], staircase(FOUR)[:30]))
    figures = {mem_lat.stem(s, "seq"): v for s, v in seq.items()} | {mem_lat.stem(s, "random"): v for s, v in rnd.items()}
    cells = {("native", "idle"): figures, ("seqonly", "idle"): {k: v for k, v in figures.items() if "_seq" in k}}
    data = SimpleNamespace(figure_names=lambda bench: sorted(figures), cells=lambda bench: list(cells),
                           values=lambda env, load, bench, f: [cells[(env, load)][f]] * 3 if f in cells[(env, load)] else [],
                           run=SimpleNamespace(fingerprints={"native": {"caches": None}}))
    found = mem_lat.levels(data, "mem")
    assert list(found) == [("native", "idle", "random")]
    kind = mem_lat.MemLatKind()
    assert kind.key_result(data, "mem", "seqonly", "idle").startswith("no random chain measured")
    assert "L1" in kind.key_result(data, "mem", "native", "idle")
    said = " ".join(t for _, _, t in kind.extra_considerations(data, "mem", []))
    assert "sequential curve" not in said and "192 KiB" not in said


def test_a_guest_shown_its_hosts_whole_last_level_cache_still_finds_dram():
    """A guest on a large server CPU is shown the socket's whole L3 (480 MiB here, as on the machine
    these tests run on), of which it gets a share: its 163 ns plateau from 4 MiB fits in that L3 on
    paper, but no cache ends near it and it is as slow as main memory, so it is DRAM. A plateau that
    ends far below its cache and is fast (the EPYC curve's 16 ns L3 share) stays a cache."""
    reported = {1: 48 << 10, 2: 2 << 20, 3: 480 << 20}
    curve = ([(s, 1.2) for s in (4 << 10, 8 << 10, 16 << 10, 32 << 10)] + [(64 << 10, 2.5)]
             + [(s, 4.0) for s in (128 << 10, 256 << 10, 512 << 10, 1 << 20)] + [(2 << 20, 40.0)]
             + [(s, 163.0) for s in (4 << 20, 8 << 20, 16 << 20, 32 << 20, 64 << 20)])
    names = [(lv.name, lv.first_size) for lv in detect_levels(curve, reported)]
    assert names == [("L1", 4 << 10), ("L2", 128 << 10), ("DRAM", 4 << 20)], names
    fast = curve[:-5] + [(s, 16.0) for s in (4 << 20, 8 << 20, 16 << 20, 32 << 20, 64 << 20)]
    last = detect_levels(fast, reported)[-1]
    assert last.name == "L3" and last.unmatched


def test_a_cache_level_names_one_plateau_only():
    """A guest reporting a 4 MiB L2 and no L3, whose curve has a 16 ns plateau ending at 512 KiB and
    a 107 ns one up to 4 MiB: both fit in the L2, but only the first is it; the second, as slow as
    main memory, is DRAM. A plateau faster than that with no cache left is said to be unnamed."""
    curve = [(4 * KiB, 1.5), (8 * KiB, 1.5), (16 * KiB, 1.5), (32 * KiB, 1.6), (64 * KiB, 15.0),
             (128 * KiB, 16.0), (256 * KiB, 16.0), (512 * KiB, 17.0), (1 * MiB, 100.0), (2 * MiB, 107.0),
             (4 * MiB, 110.0)]
    for reported in ({1: 32 * KiB, 2: 4 * MiB}, {1: 32 * KiB, 2: 4 * MiB, 3: 32 * MiB}):
        levels = detect_levels(curve, reported)
        names = [lv.name for lv in levels]
        assert names == ["L1", "L2", "DRAM"], levels_sentence(levels, reported)
        assert levels[1].last_size == 512 * KiB
    faster = (curve[:4] + [(s, 5.0) for s in (64 * KiB, 128 * KiB, 256 * KiB)]
              + [(s, 9.0) for s in (512 * KiB, 1 * MiB, 2 * MiB)])
    levels = detect_levels(faster, {1: 32 * KiB, 2: 1 * MiB})
    assert [lv.name for lv in levels] == ["L1", "L2", "unnamed"]
    assert levels_sentence(levels, {1: 32 * KiB, 2: 1 * MiB}).count("L2") == 1
