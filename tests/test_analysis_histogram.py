"""Histogram parsing, merging and percentiles against exact answers on synthetic samples."""

from __future__ import annotations

import json
import math
import subprocess

import numpy as np
import pytest
from synthetic_runs import bucket_bounds, histogram_record, nearest_rank

from rtvbench.analysis.histogram import Histogram, HistogramError, merge_all
from rtvbench.bucket_table import compact_histograms

pytestmark = pytest.mark.functional

PERCENTS = (0, 1, 50, 90, 99, 99.9, 99.99, 100)


def _hist(values: np.ndarray) -> Histogram:
    return Histogram.from_record(histogram_record(values), int(values.min()), int(values.max()))


def _samples(seed: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    body = 900 + rng.lognormal(math.log(3000), 0.6, n)        # crosses many powers of two
    small = rng.integers(0, 256, n // 20)                      # the 1 ns buckets
    spikes = rng.uniform(50_000, 2_000_000, n // 1000)         # a far tail
    return np.concatenate([body, small, spikes]).astype(np.int64)


def test_bucket_scheme_matches_the_documented_widths():
    lo, hi = bucket_bounds(np.array([0, 255, 256, 257, 511, 512, 1_000_000, 2**40 + 12345]))
    assert list(hi - lo) == [1, 1, 2, 2, 2, 4, 2**19 // 128, 2**40 // 128]
    assert lo[3] == 256 and lo[4] == 510
    assert np.all((hi - lo) <= np.maximum(1, lo / 128))


def test_merge_equals_histogram_of_the_union():
    parts = [_samples(seed, 20_000) for seed in range(4)]
    merged = merge_all(_hist(p) for p in parts)
    union = _hist(np.concatenate(parts))
    assert merged.sorted_buckets() == union.sorted_buckets()
    assert merged.total == sum(len(p) for p in parts)
    assert (merged.min_ns, merged.max_ns) == (union.min_ns, union.max_ns)
    for p in PERCENTS:
        assert merged.percentile(p) == union.percentile(p)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_percentiles_within_one_percent_of_exact(seed):
    values = _samples(seed, 200_000)
    exact = np.sort(values)
    h = _hist(values)
    for p in PERCENTS:
        want = nearest_rank(exact, p)
        got = h.percentile(p)
        assert abs(got - want) <= 0.01 * want + 0.5, (p, got, want)
    # the extremes are exact because percentiles are clamped to the known min and max
    assert h.percentile(0) == exact[0] and h.percentile(100) == exact[-1]


def test_percentile_exact_in_unit_buckets_and_nearest_rank_definition():
    h = _hist(np.array([10, 20, 30, 40], dtype=np.int64))
    assert [h.percentile(p) for p in (25, 25.01, 50, 75, 100)] == [10, 20, 20, 30, 40]


def test_ccdf_matches_exact_fraction_above_at_bucket_edges():
    values = _samples(5, 50_000)
    h = _hist(values)
    points = h.ccdf()
    assert points and all(0 < p <= 1 for _, p in points)
    assert all(a[1] >= b[1] for a, b in zip(points, points[1:]))
    for x, p in points[:: max(1, len(points) // 50)]:
        assert p == pytest.approx(np.mean(values > x), abs=1e-12)


def test_rejects_other_schemes_and_mismatched_buckets():
    with pytest.raises(HistogramError):
        Histogram.from_record({"scheme": "linear", "buckets": []})
    a = Histogram.from_record({"scheme": "log-linear", "buckets": [[512, 516, 1]]})
    b = Histogram.from_record({"scheme": "log-linear", "buckets": [[512, 514, 1]]})
    with pytest.raises(HistogramError):
        a.merge(b)


def test_bucket_entries_are_checked_and_duplicates_added():
    rec = lambda buckets: {"scheme": "log-linear", "buckets": buckets}  # noqa: E731
    h = Histogram.from_record(rec([[520, 524, 2], [512, 516, 1], [512, 516, 4], [530, 534, 0]]))
    assert h.sorted_buckets() == [(512, 516, 5), (520, 524, 2)]      # sorted, equal bounds added, empty dropped
    assert Histogram.from_record(rec([[512.0, "516", 3]])).sorted_buckets() == [(512, 516, 3)]
    for bad in ([[512, 516]], [[512, 516, 1], [520, 524]], [["a", 516, 1]], [[512, 516, None]],
                [[516, 512, 1]], [[512, 516, -1]], [[512, 516, 1], [512, 514, 1]], [[2**70, 2**71, 1]]):
        with pytest.raises(HistogramError):
            Histogram.from_record(rec(bad))


def test_compacted_records_parse_as_their_lists_do():
    values = _samples(4, 20_000)
    record = {"type": "result", "histogram": histogram_record(values),
              "response": {"histogram": histogram_record(values[:500])}}
    want = [Histogram.from_record(r["histogram"]).sorted_buckets() for r in (record, record["response"])]
    compact_histograms(record)
    assert isinstance(record["histogram"]["buckets"], np.ndarray)
    assert isinstance(record["response"]["histogram"]["buckets"], np.ndarray)
    assert [Histogram.from_record(r["histogram"]).sorted_buckets() for r in (record, record["response"])] == want
    odd = {"histogram": {"scheme": "log-linear", "buckets": [[512, 516, 1], ["x", 520, 1]]}}
    assert isinstance(compact_histograms(odd)["histogram"]["buckets"], list)   # left for the parser to name
    huge = {"histogram": {"scheme": "log-linear", "buckets": [[2**63, 2**63 + 4, 1]]}}
    with pytest.raises(HistogramError):
        Histogram.from_record(compact_histograms(huge)["histogram"])


def test_empty_histogram_has_no_percentiles():
    h = Histogram.from_record({"scheme": "log-linear", "buckets": []})
    assert h.total == 0 and h.percentile(99) is None and h.ccdf() == []


def test_percentiles_agree_with_the_real_probe(probe, tmp_path):
    # The probe computes its percentiles from the same histogram; the host must read it the same way,
    # for the merged record and for each CPU's.
    out = subprocess.run([str(probe), "latency", "--interval-us", "500", "--duration-s", "1", "--priority", "0",
                          "--policy", "other"], capture_output=True, text=True, timeout=120, check=True).stdout
    results = [r for r in map(json.loads, out.splitlines()) if r["type"] == "result"]
    assert any(r["cpu"] == "all" for r in results)
    for r in results:
        h = Histogram.from_record(r["histogram"], r["min_ns"], r["max_ns"])
        assert h.total == r["count"]
        for stem, p in (("p50", 50), ("p90", 90), ("p99", 99), ("p999", 99.9), ("p9999", 99.99)):
            if -(-round(p * 10000) * r["count"] // 1_000_000) >= r["count"]:
                # The last rank is the maximum, which the host reports exactly; the probe's bucket
                # midpoint is only within its documented 1 %.
                assert h.percentile(p) == r["max_ns"]
                assert abs(r[f"{stem}_ns"] - r["max_ns"]) <= 0.01 * r["max_ns"]
            else:
                assert h.percentile(p) == r[f"{stem}_ns"], (r["cpu"], stem)
