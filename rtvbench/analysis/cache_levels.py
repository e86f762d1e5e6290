"""Cache levels read off a memory latency curve (ns per access against working-set size).

A pointer chase costs what the smallest level holding the whole working set costs, so the
curve is a staircase: one plateau per level, a rise where the set outgrows it. Real curves
are noisy (a sample that lost its CPU), rise gradually over an octave or two (associativity,
replacement, TLB reach), and can bulge at a boundary before settling. The method:

1. work on log latency, so that "near-equal" is a ratio whatever the level's speed, and
   remove spikes of one or two points with a running median of five (a monotone staircase
   passes through it unchanged, so the steps stay where they are);
2. a plateau is a run of consecutive sizes whose latencies stay within a factor TOLERANCE
   of each other and that covers at least a doubling of the working set (MIN_SPAN) — a
   transition spans less, so its points are never mistaken for a level; a run at either end
   of the sweep needs only two points, since the level may continue beyond the sweep;
3. runs are taken longest first (by the span of sizes they cover), then the longest in what
   is left on each side, so a long plateau is never cut short by a transition point;
4. plateau ends further than TRIM from the plateau's median are transition points, and
   points between two plateaus within TRIM of one of them join it (over a spike, if need be);
5. a larger working set cannot be faster: neighbouring plateaus within TOLERANCE of each
   other are one level cut by noise (merged), and a plateau followed by a lower one is a
   bulge, of which the one covering fewer sizes is dropped;
6. levels are named L1, L2, ... in order, the last one DRAM; a plateau's latency is the
   median of its raw points, its size the largest working set still on it.

Levels closer than TOLERANCE (1.5x) in latency are not told apart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from rtvbench.units import human_size

#: largest ratio of latencies within one plateau (real L3 plateaus drift by ~1.4x)
TOLERANCE = 1.5
#: smallest ratio of last to first working-set size of a plateau inside the sweep
MIN_SPAN = 2.0
#: an end point of a plateau further than this ratio from its median belongs to a transition
TRIM = 1.25

_LOG_TOL = math.log(TOLERANCE)
_LOG_TRIM = math.log(TRIM)


@dataclass(frozen=True)
class Level:
    name: str              # "L1", "L2", ... or "DRAM"
    latency_ns: float      # median of the plateau's points
    first_size: int        # smallest working set on the plateau, bytes
    last_size: int         # largest working set still on the plateau, bytes
    points: int            # sizes on the plateau


def detect_levels(points: Iterable[tuple[float, float]]) -> list[Level]:
    """The cache levels of a curve given as (working-set bytes, ns per access) points.

    Points with a non-positive or missing latency are ignored; repeated sizes are reduced
    to their median. Returns [] when no plateau can be found (fewer than two usable points).
    """
    by_size: dict[int, list[float]] = {}
    for size, lat in points:
        if size is None or lat is None or not math.isfinite(float(lat)) or lat <= 0 or size <= 0:
            continue
        by_size.setdefault(int(size), []).append(float(lat))
    sizes = sorted(by_size)
    if len(sizes) < 2:
        return []
    raw = np.log([float(np.median(by_size[s])) for s in sizes])
    smooth = _despike(raw)
    logsize = np.log(np.asarray(sizes, dtype=float))

    runs: list[tuple[int, int]] = []
    _take_runs(smooth, logsize, 0, len(sizes), runs)
    runs = _extend(raw, [_trim(raw, i, j) for i, j in sorted(runs)])
    runs = _monotone(raw, logsize, runs)
    if not runs:
        return []
    out = []
    for k, (i, j) in enumerate(runs):
        name = "DRAM" if k == len(runs) - 1 and len(runs) > 1 else f"L{k + 1}"
        out.append(Level(name, float(np.exp(np.median(raw[i:j + 1]))), sizes[i], sizes[j], j - i + 1))
    return out


def _despike(y: np.ndarray) -> np.ndarray:
    """Running median of five (three next to the ends): a monotone curve passes unchanged, a
    spike of one or two points is replaced by its neighbours' level."""
    out = y.copy()
    for i in range(1, len(y) - 1):
        h = 2 if 2 <= i <= len(y) - 3 else 1
        out[i] = float(np.median(y[i - h:i + h + 1]))
    return out


def _qualifies(logsize: np.ndarray, i: int, j: int) -> bool:
    if j <= i:
        return False
    at_end = i == 0 or j == len(logsize) - 1
    return at_end or logsize[j] - logsize[i] >= math.log(MIN_SPAN) - 1e-9


def _take_runs(y: np.ndarray, logsize: np.ndarray, lo: int, hi: int, out: list[tuple[int, int]]) -> None:
    """Add to `out` the plateaus in y[lo:hi], longest first, then recursively on each side."""
    best = None
    for i in range(lo, hi):
        mn = mx = y[i]
        j = i
        while j + 1 < hi and max(mx, y[j + 1]) - min(mn, y[j + 1]) <= _LOG_TOL:
            j += 1
            mn, mx = min(mn, y[j]), max(mx, y[j])
        if _qualifies(logsize, i, j):
            span = (logsize[j] - logsize[i], j - i)
            if best is None or span > best[0]:
                best = (span, i, j)
    if best is None:
        return
    _, i, j = best
    out.append((i, j))
    _take_runs(y, logsize, lo, i, out)
    _take_runs(y, logsize, j + 1, hi, out)


def _trim(y: np.ndarray, i: int, j: int) -> tuple[int, int]:
    while j - i >= 2:
        med = float(np.median(y[i:j + 1]))
        if abs(y[j] - med) > _LOG_TRIM:
            j -= 1
        elif abs(y[i] - med) > _LOG_TRIM:
            i += 1
        else:
            break
    return i, j


def _extend(y: np.ndarray, runs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Give each plateau the points between it and its neighbours that lie within TRIM of its median.

    The running median shifts a step by a point when a spike sits right next to it, and trimming
    then leaves a point of the level outside its plateau; this puts it back, over the spike.
    Left neighbours extend right first, then right neighbours left into what remains.
    """
    runs = list(runs)
    n = len(y)
    for k, (i, j) in enumerate(runs):
        med = float(np.median(y[i:j + 1]))
        stop = runs[k + 1][0] if k + 1 < len(runs) else n
        for m in range(j + 1, stop):
            if abs(y[m] - med) <= _LOG_TRIM:
                j = m
        runs[k] = (i, j)
    for k, (i, j) in enumerate(runs):
        med = float(np.median(y[i:j + 1]))
        stop = runs[k - 1][1] if k > 0 else -1
        for m in range(i - 1, stop, -1):
            if abs(y[m] - med) <= _LOG_TRIM:
                i = m
        runs[k] = (i, j)
    return runs


def _monotone(y: np.ndarray, logsize: np.ndarray, runs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Merge neighbours that are the same level, drop bulges, until latency rises level by level."""
    runs = list(runs)

    def med(r):
        return float(np.median(y[r[0]:r[1] + 1]))

    changed = True
    while changed and len(runs) > 1:
        changed = False
        for k in range(len(runs) - 1):
            a, b = runs[k], runs[k + 1]
            step = med(b) - med(a)
            if abs(step) < _LOG_TOL:
                runs[k:k + 2] = [(a[0], b[1])]
                changed = True
                break
            if step < 0:
                span_a, span_b = logsize[a[1]] - logsize[a[0]], logsize[b[1]] - logsize[b[0]]
                del runs[k if span_a <= span_b else k + 1]
                changed = True
                break
    return runs


def _latency(ns: float) -> str:
    return f"{ns:.0f}" if ns >= 100 else f"{ns:.2g}"


def levels_sentence(levels: list[Level]) -> str:
    """"~1.2 ns up to 48 KiB (L1), ~4 ns up to 2 MiB (L2), DRAM ~90 ns (from 4 MiB)"."""
    if not levels:
        return "no plateau could be found in the curve"
    if len(levels) == 1:
        lv = levels[0]
        return (f"one plateau at ~{_latency(lv.latency_ns)} ns from {human_size(lv.first_size)} to "
                f"{human_size(lv.last_size)}: no level boundary within the measured sizes")
    parts = [f"~{_latency(lv.latency_ns)} ns up to {human_size(lv.last_size)} ({lv.name})" for lv in levels[:-1]]
    last = levels[-1]
    parts.append(f"{last.name} ~{_latency(last.latency_ns)} ns (from {human_size(last.first_size)})")
    return ", ".join(parts)
