"""The probe's log-linear latency histogram: parse, merge, percentiles, CCDF.

The probe lists only non-empty buckets as [lo_ns, hi_ns, count] with
lo_ns <= v < hi_ns; histograms of the same scheme merge by adding counts of
equal lo_ns (docs/probe-output.md, "Histogram encoding").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rtvbench.units import PERCENTILES, TIME_STEMS, TIME_UNITS

SCHEME = "log-linear"


class HistogramError(ValueError):
    """A histogram record the analysis cannot interpret."""


@dataclass
class Histogram:
    """Bucket counts keyed by lower bound, plus the exact extremes when known.

    The exact min/max travel with the buckets because the probe reports them
    exactly and percentiles are clamped to them; the buckets alone only bound
    the extremes to within a bucket width.
    """

    buckets: dict[int, tuple[int, int]] = field(default_factory=dict)   # lo -> (hi, count)
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
        buckets = h.buckets
        # A long run has thousands of buckets per result and a report reads hundreds of results:
        # the common case (three JSON integers, a new lower bound) is checked inline.
        for entry in hist.get("buckets") or []:
            try:
                lo, hi, count = entry
                if not (type(lo) is int and type(hi) is int and type(count) is int):
                    lo, hi, count = int(lo), int(hi), int(count)
            except (TypeError, ValueError) as exc:
                raise HistogramError(f"histogram bucket {entry!r} is not [lo_ns, hi_ns, count]") from exc
            if hi <= lo or count < 0:
                raise HistogramError(f"histogram bucket {entry!r} has hi <= lo or a negative count")
            if count and lo not in buckets:
                buckets[lo] = (hi, count)
            else:
                h.add_bucket(lo, hi, count)
        return h

    def add_bucket(self, lo: int, hi: int, count: int) -> None:
        if count == 0:
            return
        old = self.buckets.get(lo)
        if old is not None and old[0] != hi:
            raise HistogramError(f"bucket at {lo} ns has upper bounds {old[0]} and {hi}: different schemes")
        self.buckets[lo] = (hi, (old[1] if old else 0) + count)

    def merge(self, other: Histogram) -> Histogram:
        """A new histogram holding the samples of both."""
        if (self.sub_bucket_bits is not None and other.sub_bucket_bits is not None
                and self.sub_bucket_bits != other.sub_bucket_bits):
            raise HistogramError("cannot merge histograms with different sub_bucket_bits")
        out = Histogram(dict(self.buckets), _min_opt(self.min_ns, other.min_ns),
                        _max_opt(self.max_ns, other.max_ns),
                        self.sub_bucket_bits if self.sub_bucket_bits is not None else other.sub_bucket_bits)
        for lo, (hi, count) in other.buckets.items():
            out.add_bucket(lo, hi, count)
        return out

    @property
    def total(self) -> int:
        return sum(c for _, c in self.buckets.values())

    def sorted_buckets(self) -> list[tuple[int, int, int]]:
        return [(lo, hi, c) for lo, (hi, c) in sorted(self.buckets.items())]

    def lowest(self) -> int | None:
        """Exact minimum if known, else the lowest bucket's lower bound."""
        if self.min_ns is not None:
            return self.min_ns
        return min(self.buckets) if self.buckets else None

    def highest(self) -> int | None:
        """Exact maximum if known, else the highest value the top bucket can hold."""
        if self.max_ns is not None:
            return self.max_ns
        if not self.buckets:
            return None
        return self.buckets[max(self.buckets)][0] - 1

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
        seen = 0
        for lo, hi, count in self.sorted_buckets():
            seen += count
            if seen >= rank:
                return _clamp((lo + hi) // 2, self.lowest(), self.highest())
        raise AssertionError("rank beyond total")   # unreachable: rank <= n

    def mean(self) -> float | None:
        """Mean from bucket midpoints (the probe's exact mean is preferred when present)."""
        n = self.total
        if n == 0:
            return None
        return sum(c * (lo + hi) / 2.0 for lo, hi, c in self.sorted_buckets()) / n

    def count_above(self, threshold_ns: float) -> tuple[int, int]:
        """Samples certainly above the threshold, and those possibly above (bucket straddles it)."""
        sure = maybe = 0
        for lo, hi, c in self.sorted_buckets():
            if lo > threshold_ns:
                sure += c
            elif hi - 1 > threshold_ns:
                maybe += c
        return sure, maybe

    def ccdf(self) -> list[tuple[float, float]]:
        """Points (x_ns, P(X > x)) at every bucket's upper edge; ends at the last non-zero probability.

        P(X > x) is evaluated at x = hi - 1 (the largest value the bucket can
        hold), so each point is exact for the buckets up to x.
        """
        n = self.total
        if n == 0:
            return []
        points = []
        above = n
        for lo, hi, c in self.sorted_buckets():
            above -= c
            if above <= 0:
                break
            x = _clamp(hi - 1, self.lowest(), self.highest())
            points.append((float(x), above / n))
        return points


def result_histogram(r: dict[str, Any] | None) -> Histogram | None:
    """The distribution of a result record that carries one (its `histogram` with its exact `min_ns`
    and `max_ns`), or None when it has none or one this version cannot read."""
    if not isinstance(r, dict) or not r.get("histogram"):
        return None
    try:
        return Histogram.from_record(r["histogram"], r.get("min_ns"), r.get("max_ns"))
    except HistogramError:
        return None


def add_time_figures(out: dict[str, float], r: dict[str, Any], prefix: str = "") -> None:
    """A result record's distribution figures (`<prefix><stem>_<unit>`): the record's own `<stem>_ns`,
    or a percentile read from its histogram when the record omits it. Only numbers count (the
    schema lets some fields be lists). The histogram is parsed only then: records usually carry
    every percentile, and parsing thousands of buckets per record was a fifth of a report's time."""
    hist: Histogram | None | bool = False          # False: not parsed yet
    for stem in TIME_STEMS:
        ns = r.get(f"{stem}_ns")
        if isinstance(ns, bool) or not isinstance(ns, (int, float)):
            ns = None
        if ns is None and stem in PERCENTILES:
            if hist is False:
                hist = result_histogram(r)
            if hist is not None:
                ns = hist.percentile(PERCENTILES[stem])
        if ns is None:
            continue
        for unit, scale in TIME_UNITS.items():
            out[f"{prefix}{stem}_{unit}"] = ns / scale


def merge_all(histograms: Iterable[Histogram]) -> Histogram:
    out = Histogram()
    for h in histograms:
        out = out.merge(h)
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
