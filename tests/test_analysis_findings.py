"""The generated Consideration: effects with numbers, deadlines, noise, probe warnings, failures."""

from __future__ import annotations

import itertools

import numpy as np
from synthetic_runs import build_run, lognormal_latency

from rtvbench.analysis.compare import comparisons
from rtvbench.analysis.dataset import RunData
from rtvbench.analysis.findings import considerations
from rtvbench.units import format_percent, format_value


def _findings(run):
    data = RunData(run)
    return data, considerations(data, comparisons(data))["wakeup"]


def test_load_effect_sentence_quotes_medians_change_and_significance():
    run = build_run(samples=20_000)
    data, findings = _findings(run)
    before = np.median(data.values("native", "idle", "wakeup", "p9999_us"))
    after = np.median(data.values("native", "stress", "wakeup", "p9999_us"))
    expected = (f"Under load `stress` (against `idle`) in `native`, p99.99 rises from "
                f"{format_value(before, 'us')} to {format_value(after, 'us')} "
                f"({format_percent((after / before - 1) * 100)}, significant)")
    texts = [f.text for f in findings]
    assert any(t.startswith(expected) for t in texts), (expected, texts)
    assert any(t.startswith("In `guest` compared with `native` under `idle`, p99.99 rises") for t in texts)


def test_tail_figure_follows_the_sample_count():
    _, findings = _findings(build_run(samples=2_000, repetitions=3))
    effects = [f.text for f in findings if f.topic == "load"]
    assert effects and all("p99.9 " in t and "p99.99" not in t for t in effects)


def test_deadline_exceedances_are_counted_per_cell():
    run = build_run(samples=20_000)
    _, findings = _findings(run)
    total = sum(m.result("all")["over"]["100000"] for m in run.measurements
                if (m.environment, m.load) == ("guest", "stress"))
    [deadline] = [f for f in findings if f.topic == "deadline"]
    assert deadline.severity == "warning"
    assert f"{total:,} samples in `guest` under `stress` (5 of 5 repetitions)" in deadline.text
    assert "the other 2 environment/load combinations stayed below it" in deadline.text

    quiet = build_run(distributions={("native", "idle"): lognormal_latency(2_000)}, samples=5_000)
    [deadline] = [f for f in _findings(quiet)[1] if f.topic == "deadline"]
    assert deadline.text == "No sample exceeded the 100 us deadline in any run."


def test_noisy_repetitions_are_flagged_and_steady_ones_are_not():
    medians = itertools.cycle([2_000, 4_000])      # every other repetition twice as slow

    def alternating(rng, n):
        return lognormal_latency(next(medians))(rng, n)

    run = build_run(distributions={("native", "idle"): lognormal_latency(2_000), ("native", "stress"): alternating},
                    samples=5_000, repetitions=6)
    noisy = [f.text for f in _findings(run)[1] if f.topic == "noisy"]
    assert len(noisy) == 1 and "`native` under `stress` are noisy" in noisy[0] and "avg varies by" in noisy[0]


def test_probe_warnings_and_failed_measurements_are_reported():
    run = build_run(samples=2_000,
                    warnings={("guest", "idle"): [{"code": "no_rt_policy",
                                                   "message": "SCHED_FIFO was refused; run as root."}]},
                    status={("native", "stress", 3): "error", ("guest", "idle", 0): "interrupted"})
    texts = [f.text for f in _findings(run)[1] if f.severity == "warning"]
    assert ("The probe warned `no_rt_policy` in `guest` under `idle` (5 of 5 measurements): "
            "SCHED_FIFO was refused; run as root.") in texts
    assert any(t.startswith("Repetition 4 in `native` under `stress` failed: probe exited") for t in texts)
    assert any(t.startswith("Repetition 1 in `guest` under `idle` was interrupted") for t in texts)
