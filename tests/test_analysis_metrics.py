"""Figures of a latency measurement, figure names, and summaries across repetitions."""

from __future__ import annotations

import numpy as np
import pytest
from synthetic_runs import build_run, lognormal_latency

from rtvbench.analysis.dataset import RunData
from rtvbench.analysis.metrics import known_figure, measurement_figures, split_metric, unit_of
from rtvbench.analysis.stats import summaries, summarize


def test_known_figures_of_latency():
    for f in ("max_us", "min_ns", "avg_ms", "stddev_us", "p50_us", "p99_ns", "p9999_us", "p999999_ms",
              "count", "missed", "over_100us", "over_2.5us"):
        assert known_figure("latency", f), f
    for f in ("max", "p95_us", "max_s", "over_100", "over_us", "mean_us"):
        assert not known_figure("latency", f), f
    assert not known_figure("no-such-kind", "max_us")


def test_figures_of_one_measurement_in_all_units():
    run = build_run(distributions={("native", "idle"): lognormal_latency(2_000)}, repetitions=1,
                    samples=5_000, thresholds_ns=(5_000, 2_500))
    m = run.measurements[0]
    r = m.result("all")
    f = measurement_figures(m)
    assert f["count"] == 5_000 and f["missed"] == 0
    assert f["max_ns"] == r["max_ns"] and f["max_us"] == pytest.approx(r["max_ns"] / 1e3)
    assert f["p99_ms"] == pytest.approx(r["p99_ns"] / 1e6)
    assert f["over_5us"] == r["over"]["5000"] and f["over_2.5us"] == r["over"]["2500"]
    assert f["over_2.5us"] > f["over_5us"] > 0
    # the merged record is used, not a per-CPU one
    assert f["count"] == sum(x["count"] for x in m.results if x["cpu"] != "all")


def test_percentiles_fall_back_to_the_histogram_when_the_probe_left_them_null():
    run = build_run(distributions={("native", "idle"): lognormal_latency(2_000)}, repetitions=1, samples=20_000)
    m = run.measurements[0]
    reported = m.result("all")["p99_ns"]
    m.result("all")["p99_ns"] = None
    assert measurement_figures(m)["p99_ns"] == pytest.approx(reported, rel=0.01)


def test_empty_and_failed_measurements_have_no_time_figures():
    run = build_run(distributions={("native", "idle"): lognormal_latency(2_000)}, repetitions=2, samples=100,
                    status={("native", "idle", 1): "error"})
    run.measurements[0].results[-1] = {**run.measurements[0].results[-1], "count": 0}
    assert "max_us" not in measurement_figures(run.measurements[0])
    assert measurement_figures(run.measurements[1]) == {}


def test_metric_names_and_units():
    assert split_metric("wakeup.max_us") == ("wakeup", "max_us")
    assert split_metric("a.b.p99_us") == ("a.b", "p99_us")
    with pytest.raises(ValueError):
        split_metric("max_us")
    assert [unit_of(f) for f in ("max_us", "p99_ns", "avg_ms", "count", "over_100us")] == \
        ["us", "ns", "ms", "count", "count"]


def test_summarize_numbers():
    s = summarize([4.0, 1.0, 3.0, 2.0, 10.0])
    assert (s.n, s.min, s.max, s.mean, s.median) == (5, 1.0, 10.0, 4.0, 3.0)
    assert s.stddev == pytest.approx(np.std([4, 1, 3, 2, 10], ddof=1))
    assert s.percentiles["p25"] == 2.0 and s.percentiles["p75"] == 4.0
    assert s.values == [4.0, 1.0, 3.0, 2.0, 10.0] and s.cv == pytest.approx(s.stddev / 4.0)
    one = summarize([7.0])
    assert one.stddev is None and one.cv is None and one.median == 7.0
    assert summarize([]).n == 0


def test_summaries_per_cell_over_completed_repetitions_only():
    run = build_run(repetitions=4, samples=2_000, status={("guest", "stress", 1): "interrupted"})
    data = RunData(run)
    cells = {(s.environment, s.load, s.figure): s.summary for s in summaries(data)}
    native_max = [m.result("all")["max_ns"] / 1e3 for m in run.measurements
                  if (m.environment, m.load) == ("native", "idle")]
    assert cells[("native", "idle", "max_us")].values == pytest.approx(native_max)
    assert cells[("native", "idle", "max_us")].max == pytest.approx(max(native_max))
    assert cells[("guest", "stress", "max_us")].n == 3
