"""The probe's log-linear latency histogram: parse, merge, percentiles, CCDF.

The probe lists only non-empty buckets as [lo_ns, hi_ns, count] with
lo_ns <= v < hi_ns; histograms of the same scheme merge by adding counts of
equal lo_ns (docs/probe-output.md, "Histogram encoding").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rtvbench.bucket_table import bucket_table

SCHEME = "log-linear"


class HistogramError(ValueError):
    """A histogram record the analysis cannot interpret."""


@dataclass
class Histogram:
    """Bucket bounds and counts in ascending order of lower bound, plus the exact extremes when known.

    The exact min/max travel with the buckets because the probe reports them
    exactly and percentiles are clamped to them; the buckets alone only bound
    the extremes to within a bucket width. Buckets are numpy arrays: a report
    reads hundreds of results of thousands of buckets each, which as Python
    objects cost it a tenth of its time and a fifth of its memory.
    """

    lo: np.ndarray = field(default_factory=lambda: _EMPTY)
    hi: np.ndarray = field(default_factory=lambda: _EMPTY)
    count: np.ndarray = field(default_factory=lambda: _EMPTY)
    min_ns: int | None = None
    max_ns: int | None = None
    sub_bucket_bits: int | None = None

    @classmethod
    def from_record(cls, hist: dict[str, Any] | None, min_ns: int | None = None,
                    max_ns: int | None = None) -> Histogram:
        """Parse the `histogram` object of a latency result record."""
        h = cls(min_ns=min_ns, max_ns=max_ns)
        if not hist:
            return h
        scheme = hist.get("scheme")
        if scheme != SCHEME:
            raise HistogramError(f"histogram scheme {scheme!r} is not {SCHEME!r}")
        h.sub_bucket_bits = hist.get("sub_bucket_bits")
        entries = hist.get("buckets")
        if entries is None:
            entries = []
        table = entries if isinstance(entries, np.ndarray) else bucket_table(entries)
        if table is None:                                  # not all JSON integers: convert one by one
            rows = [_entry(e) for e in entries]
            try:
                table = np.array(rows, dtype=np.int64).reshape(-1, 3)
            except OverflowError as exc:
                raise HistogramError("a histogram bucket holds a number beyond 64 bits") from exc
        bad = (table[:, 1] <= table[:, 0]) | (table[:, 2] < 0)
        if bad.any():
            entry = entries[int(np.argmax(bad))]
            raise HistogramError(f"histogram bucket {entry!r} has hi <= lo or a negative count")
        h.lo, h.hi, h.count = _combine(table[:, 0], table[:, 1], table[:, 2])
        return h

    def merge(self, other: Histogram) -> Histogram:
        """A new histogram holding the samples of both."""
        return merge_all([self, other])

    @property
    def total(self) -> int:
        return int(self.count.sum())

    def sorted_buckets(self) -> list[tuple[int, int, int]]:
        return list(zip(self.lo.tolist(), self.hi.tolist(), self.count.tolist()))

    def lowest(self) -> int | None:
        """Exact minimum if known, else the lowest bucket's lower bound."""
        if self.min_ns is not None:
            return self.min_ns
        return int(self.lo[0]) if len(self.lo) else None

    def highest(self) -> int | None:
        """Exact maximum if known, else the highest value the top bucket can hold."""
        if self.max_ns is not None:
            return self.max_ns
        return int(self.hi[-1]) - 1 if len(self.hi) else None

    def percentile(self, p: float) -> float | None:
        """Nearest-rank percentile: the bucket holding the ceil(p/100 * n)-th sample.

        Reports the bucket's midpoint (lo + hi) // 2, as the probe does, which is
        exact for the 1 ns buckets and within half a bucket (< 0.4 %) above,
        clamped to the known extremes; the first and last rank return the exact
        extremes.
        """
        n = self.total
        if n == 0:
            return None
        if not 0 <= p <= 100:
            raise ValueError(f"percentile {p} outside 0..100")
        # Exactly as the probe computes it: p scaled by 10^4 (at most 4 decimals), integer ceiling.
        rank = max(1, -(-round(p * 10000) * n // 1_000_000))
        # The first and last ranks are the extremes, which are known exactly when the probe reported them.
        if rank == n and self.max_ns is not None:
            return float(self.max_ns)
        if rank == 1 and self.min_ns is not None:
            return float(self.min_ns)
        i = int(np.searchsorted(np.cumsum(self.count), rank))   # the first bucket whose running count reaches it
        return _clamp((int(self.lo[i]) + int(self.hi[i])) // 2, self.lowest(), self.highest())

    def mean(self) -> float | None:
        """Mean from bucket midpoints (the probe's exact mean is preferred when present)."""
        n = self.total
        if n == 0:
            return None
        return float(np.sum(self.count * ((self.lo + self.hi) / 2.0))) / n

    def ccdf(self) -> list[tuple[float, float]]:
        """Points (x_ns, P(X > x)) at every bucket's upper edge; ends at the last non-zero probability.

        P(X > x) is evaluated at x = hi - 1 (the largest value the bucket can
        hold), so each point is exact for the buckets up to x.
        """
        n = self.total
        if n == 0:
            return []
        above = n - np.cumsum(self.count)
        keep = above > 0
        lowest, highest = self.lowest(), self.highest()
        x = np.clip(self.hi[keep] - 1, lowest, highest).astype(float)
        return list(zip(x.tolist(), (above[keep] / n).tolist()))


_EMPTY = np.zeros(0, dtype=np.int64)


def _entry(entry) -> tuple[int, int, int]:
    try:
        lo, hi, count = entry
        return int(lo), int(hi), int(count)
    except (TypeError, ValueError, OverflowError) as exc:
        raise HistogramError(f"histogram bucket {entry!r} is not [lo_ns, hi_ns, count]") from exc


def _combine(lo: np.ndarray, hi: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Buckets sorted by lower bound, counts of equal lower bounds added, empty buckets dropped; equal
    lower bounds with different upper bounds are different schemes and refused."""
    order = np.argsort(lo, kind="stable")
    lo, hi, count = lo[order], hi[order], count[order]
    if len(lo) > 1:
        same = lo[1:] == lo[:-1]
        if same.any():
            clash = same & (hi[1:] != hi[:-1])
            if clash.any():
                i = int(np.argmax(clash))
                raise HistogramError(f"bucket at {int(lo[i])} ns has upper bounds {int(hi[i])} and {int(hi[i + 1])}: "
                                     "different schemes")
            starts = np.flatnonzero(np.concatenate([[True], ~same]))
            lo, hi, count = lo[starts], hi[starts], np.add.reduceat(count, starts)
    keep = count > 0
    return lo[keep], hi[keep], count[keep]


def result_histogram(r: dict[str, Any] | None) -> Histogram | None:
    """The distribution of a result record that carries one (its `histogram` with its exact `min_ns`
    and `max_ns`), or None when it has none or one this version cannot read."""
    if not isinstance(r, dict) or not r.get("histogram"):
        return None
    try:
        return Histogram.from_record(r["histogram"], r.get("min_ns"), r.get("max_ns"))
    except HistogramError:
        return None


def merge_all(histograms: Iterable[Histogram]) -> Histogram:
    """One histogram of the samples of all (in one sort, rather than one per pair)."""
    hs = list(histograms)
    bits = {h.sub_bucket_bits for h in hs} - {None}
    if len(bits) > 1:
        raise HistogramError("cannot merge histograms with different sub_bucket_bits")
    out = Histogram(sub_bucket_bits=bits.pop() if bits else None)
    if hs:
        out.lo, out.hi, out.count = _combine(*(np.concatenate([getattr(h, a) for h in hs]) for a in ("lo", "hi", "count")))
    for h in hs:
        out.min_ns, out.max_ns = _min_opt(out.min_ns, h.min_ns), _max_opt(out.max_ns, h.max_ns)
    return out


def _clamp(value: float, lo: float | None, hi: float | None) -> float:
    if lo is not None and value < lo:
        value = lo
    if hi is not None and value > hi:
        value = hi
    return float(value)


def _min_opt(a, b):
    return b if a is None else a if b is None else min(a, b)


def _max_opt(a, b):
    return b if a is None else a if b is None else max(a, b)
