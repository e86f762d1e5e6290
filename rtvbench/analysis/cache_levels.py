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
6. naming: a plateau's latency is the median of its raw points, its size the largest working
   set still on it. Main memory is what lies beyond the last-level cache, so:
   - where the machine reports its caches (sysfs, recorded by the probe's sysinfo), a plateau
     that starts at the largest reported cache's size or ends well beyond it is DRAM, as are
     slower sizes past the last plateau that do not fit in that cache; the others are named by
     the smallest reported cache their working sets fit in of those beyond the last level a faster
     plateau is named by (a name is one plateau's: with none left, a plateau as slow as main memory
     is DRAM and a faster one is unnamed), and match it when they end within a
     factor of two of its size (TLB reach and associativity make the step gradual) — a plateau
     that ends far below it is said not to match, unless it is as slow as main memory (60 ns or
     more after a faster level): a guest can be shown its host's whole last-level cache, hundreds
     of MiB, of which it gets a share, and such a plateau is DRAM;
   - where it does not, the last plateau is DRAM, unless the curve rises further beyond it
     without settling: then every plateau is a cache and the rest is said as a rise (which of its
     sizes are main memory only the cache sizes could tell), so a fast plateau is never called
     DRAM because slower sizes follow.

Levels closer than TOLERANCE (1.5x) in latency are not told apart. Only a random chain shows
levels: a sequential chain is prefetched, and its steps are the prefetchers', not the caches'.
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


#: a plateau's end matches a reported cache size within this factor
MATCH_FACTOR = 2.0
#: slower than any cache hit (large server L3s answer in 30-50 ns, main memory in 80 ns and more): a
#: plateau this slow that ends far below the reported cache it would fit in is main memory
DRAM_FLOOR_NS = 60.0
#: the name of sizes past the last plateau that keep rising, where no cache sizes say which are DRAM
RISE = "rise"
#: the name of a plateau faster than main memory whose working sets fit in no reported cache that a
#: faster plateau has not already named (a level's name is one plateau's)
UNNAMED = "unnamed"
#: why a plateau is UNNAMED
UNNAMED_WHY = "every reported cache it fits in names a faster plateau"


@dataclass(frozen=True)
class Level:
    name: str              # "L1", "L2", ... or "DRAM"
    latency_ns: float      # median of the plateau's points (of a rise: of its points)
    first_size: int        # smallest working set on the plateau, bytes
    last_size: int         # largest working set still on the plateau, bytes
    points: int            # sizes on the plateau
    settled: bool = True   # False: a rise that has not levelled off within the sweep (latency: its largest set's)
    reported_size: int | None = None    # the reported cache size the plateau's end matches
    unmatched: bool = False             # caches were reported and none ends near this plateau

    @property
    def cache_level(self) -> int | None:
        """The reported cache level this plateau is named by (2 for "L2"), else None."""
        return int(self.name[1:]) if self.name[:1] == "L" and self.name[1:].isdigit() else None


def reported_caches(caches) -> dict[int, int]:
    """level -> size in bytes of the data (or unified) caches in a sysinfo `caches` list; {} when
    there is none (the field is null or missing: sysfs listed no caches)."""
    out: dict[int, int] = {}
    for c in caches if isinstance(caches, list) else []:
        if not isinstance(c, dict) or c.get("type") == "Instruction":
            continue
        level, size = c.get("level"), c.get("size_bytes")
        if isinstance(level, int) and isinstance(size, int) and size > 0:
            out[level] = max(size, out.get(level, 0))
    return out


def detect_levels(points: Iterable[tuple[float, float]], reported: dict[int, int] | None = None) -> list[Level]:
    """The cache levels of a curve given as (working-set bytes, ns per access) points, named against
    the machine's `reported` caches (level -> bytes, reported_caches) when it has them.

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
    plateaus = [(float(np.exp(np.median(raw[i:j + 1]))), i, j) for i, j in runs]
    # Sizes after the last plateau that stay above it up to the end of the sweep: the curve went on
    # rising without settling. Two points at least: one high point at the end may be a spike.
    last_lat, _, last_j = plateaus[-1]
    high = math.log(last_lat) + _LOG_TOL
    k0 = len(sizes)
    while k0 - 1 > last_j and raw[k0 - 1] > high:
        k0 -= 1
    if reported:
        return _named_by_reports(plateaus, raw, sizes, reported)
    rise = None
    if len(sizes) - k0 >= 2:
        # Which of these sizes are main memory is unknown without the cache sizes: a rise, whose
        # latency is that of the largest working set.
        rise = Level(RISE, float(np.exp(raw[-1])), sizes[k0], sizes[-1], len(sizes) - k0, settled=False)
    out = [Level(f"L{k + 1}", lat, sizes[i], sizes[j], j - i + 1) for k, (lat, i, j) in enumerate(plateaus)]
    if rise is not None:
        return out + [rise]
    if len(out) > 1:
        out[-1] = Level("DRAM", out[-1].latency_ns, out[-1].first_size, out[-1].last_size, out[-1].points)
    return out


def _named_by_reports(plateaus, raw: np.ndarray, sizes: list[int], reported: dict[int, int]) -> list[Level]:
    llc = max(reported.values())
    out: list[Level] = []
    dram_from = None
    for lat, i, j in plateaus:
        if sizes[i] >= llc or sizes[j] > llc * MATCH_FACTOR:       # does not fit in the last-level cache
            # Main memory's latency keeps growing with the TLB misses of larger sets: steps beyond the
            # last-level cache are one level, not several.
            dram_from = i if dram_from is None else dram_from
            if out and out[-1].name == "DRAM":
                out.pop()
            out.append(Level("DRAM", float(np.exp(np.median(raw[dram_from:j + 1]))), sizes[dram_from], sizes[j],
                             j - dram_from + 1))
            continue
        # The level is the smallest cache the plateau's working sets fit in beyond the levels already
        # named (a level is one plateau: a slower one after it is a further level or main memory); it
        # matches that cache when it ends within MATCH_FACTOR of its size.
        named = max((lv.cache_level for lv in out if lv.cache_level), default=0)
        free = [(lv, sz) for lv, sz in reported.items() if sz * MATCH_FACTOR >= sizes[j] and lv > named]
        if not free:
            if out and lat >= DRAM_FLOOR_NS:
                dram_from = i if dram_from is None else dram_from
                out.append(Level("DRAM", float(np.exp(np.median(raw[dram_from:j + 1]))), sizes[dram_from],
                                 sizes[j], j - dram_from + 1))
            else:
                out.append(Level(UNNAMED, lat, sizes[i], sizes[j], j - i + 1, unmatched=True))
            continue
        level, size = min(free, key=lambda x: x[1])
        if sizes[j] * MATCH_FACTOR >= size:
            out.append(Level(f"L{level}", lat, sizes[i], sizes[j], j - i + 1, reported_size=size))
        elif out and lat >= DRAM_FLOOR_NS:
            # Ends far below the cache it would fit in and is as slow as main memory: a guest shown its
            # host's whole last-level cache (hundreds of MiB) gets only a share of it.
            if out[-1].name == "DRAM":
                out.pop()
            else:
                dram_from = i
            out.append(Level("DRAM", float(np.exp(np.median(raw[dram_from:j + 1]))), sizes[dram_from], sizes[j],
                             j - dram_from + 1))
        else:
            out.append(Level(f"L{level}", lat, sizes[i], sizes[j], j - i + 1, unmatched=True))
    if not any(lv.name == "DRAM" for lv in out):
        # Sizes beyond the last plateau that do not fit in the last-level cache and are clearly
        # slower are main memory, however few (a quick sweep has one such size).
        last_lat, _, last_j = plateaus[-1]
        beyond = [k for k in range(last_j + 1, len(sizes))
                  if sizes[k] >= llc and raw[k] > math.log(last_lat) + _LOG_TOL]
        if beyond:
            k0 = beyond[0]
            out.append(Level("DRAM", float(np.exp(np.median(raw[k0:]))), sizes[k0], sizes[-1], len(sizes) - k0,
                             ))
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


def levels_sentence(levels: list[Level], reported: dict[int, int] | None = None) -> str:
    """"~1.2 ns up to 48 KiB (L1, 48 KiB reported), ~4 ns up to 2 MiB (L2, ...), DRAM ~90 ns (from
    4 MiB)"; without reported caches the sentence says the names are read off the curve alone."""
    if not levels:
        return "no plateau could be found in the curve"
    if len(levels) == 1:
        lv = levels[0]
        return (f"one plateau at ~{_latency(lv.latency_ns)} ns from {human_size(lv.first_size)} to "
                f"{human_size(lv.last_size)}: no level boundary within the measured sizes")
    parts = []
    for lv in levels:
        if lv.name == RISE:
            parts.append(f"then rising without a plateau from {human_size(lv.first_size)} to "
                         f"~{_latency(lv.latency_ns)} ns at {human_size(lv.last_size)}")
            continue
        if lv.name == "DRAM":
            parts.append(f"DRAM ~{_latency(lv.latency_ns)} ns (from {human_size(lv.first_size)})")
            continue
        if lv.name == UNNAMED:
            parts.append(f"~{_latency(lv.latency_ns)} ns up to {human_size(lv.last_size)} ({UNNAMED}: {UNNAMED_WHY})")
            continue
        check = (f", {human_size(lv.reported_size)} reported" if lv.reported_size else
                 ", no reported cache ends near it" if lv.unmatched else "")
        parts.append(f"~{_latency(lv.latency_ns)} ns up to {human_size(lv.last_size)} ({lv.name}{check})")
    text = ", ".join(parts)
    if reported is not None and not reported:
        text += " (the machine reports no cache sizes: the names are read off the curve alone)"
    return text
