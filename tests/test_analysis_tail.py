"""Tail coverage and the extreme-value estimate (rtvbench/analysis/tail.py), against ground truth:
synthetic samples with a known generalized Pareto tail, whose 1 - 10^-6 quantile is known exactly,
and a bounded (uniform) distribution, which has no such tail to extrapolate."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from rtvbench.analysis.evaluation import evaluate_run
from rtvbench.analysis.tail import (MAX_CI_RATIO, MAX_SHAPE, _fit, _gpd_cdf, _ks_p, _loglik, covered, estimate_tail,
                                    kolmogorov_sf, samples_needed)
from synthetic_runs import bucket_bounds, typical_run

XI, SIGMA, LOC = 0.2, 5.0, 20.0
TRUE_1E6 = LOC + SIGMA / XI * ((1e-6) ** -XI - 1)


def _gpd(seed: int, n: int) -> np.ndarray:
    return LOC + stats.genpareto(XI, scale=SIGMA).rvs(n, random_state=np.random.default_rng(seed))


def test_the_interval_covers_the_true_quantile_in_at_least_90_percent_of_200_trials():
    hits, widths = 0, []
    for seed in range(200):
        e = estimate_tail(_gpd(seed, 20_000))
        assert e.ok, e.refused
        hits += e.ci_low <= TRUE_1E6 <= e.ci_high
        widths.append(e.ci_high / e.ci_low)
    assert hits >= 180, hits
    # An interval, not a shrug: 50 times beyond the samples, its ends stay within a factor of a few.
    assert np.median(widths) < 6


def test_histogram_buckets_give_the_estimate_of_the_raw_samples():
    x = _gpd(1, 50_000) * 1000                       # ns, as the probe's histogram holds them
    raw = estimate_tail(x / 1000)
    lo, hi = bucket_bounds(x.astype(np.int64))
    mids, counts = np.unique((lo + hi) / 2, return_counts=True)
    binned = estimate_tail(mids / 1000, counts)
    assert binned.ok and binned.value == pytest.approx(raw.value, rel=0.05)


def test_a_bounded_tail_is_refused_with_the_reason():
    e = estimate_tail(np.random.default_rng(3).uniform(10, 100, 50_000))
    assert not e.ok and "the tail is bounded" in e.refused and e.shape < -0.5


def test_too_few_samples_and_a_bad_fit_are_refused():
    assert "too few for a tail fit" in estimate_tail(_gpd(2, 500)).refused
    # Two separate clusters at the top: no generalized Pareto shape fits their excesses.
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.normal(100, 1, 49_000), rng.normal(300, 0.5, 500), rng.normal(1000, 0.5, 500)])
    e = estimate_tail(x)
    assert not e.ok and ("does not fit" in e.refused or "bounded" in e.refused), e


def test_what_a_sample_count_covers():
    assert covered(115_586) == "events rarer than about 1 in 100 000 are not covered"
    assert covered(3_000_000) == "events rarer than about 1 in 10^6 are not covered"
    assert samples_needed(0.9999) == 100_000 and samples_needed(0.99) == 1000


def test_the_report_states_coverage_and_the_estimate_per_cell():
    ev = evaluate_run(typical_run())
    tails = ev.extras["wakeup"].tails
    assert {(t.environment, t.load) for t in tails} == {(e, ld) for e in ("native", "guest")
                                                        for ld in ("idle", "stress")}
    native = next(t for t in tails if (t.environment, t.load) == ("native", "idle"))
    assert native.samples == 5 * 20_000 and native.coverage.startswith("events rarer than about 1 in 100 000")
    assert native.max_us == pytest.approx(max(ev.data.values("native", "idle", "wakeup", "max_us")))
    [said] = [f.text for f in ev.findings["wakeup"] if f.topic == "tail"]
    assert said.startswith("Tail coverage of `wakeup`: the maxima are over 80,000 to 100,000 samples")
    assert "not a measurement" in said or "no extreme-value estimate" in said


def test_histograms_of_every_shape_give_an_estimate_or_a_reason_never_an_error():
    rng = np.random.default_rng(0)
    shapes = [lambda n: rng.lognormal(8, 0.3, n),
              lambda n: np.concatenate([rng.lognormal(8, 0.2, n), rng.uniform(1e5, 2e5, max(1, n // 1000))]),
              lambda n: np.full(n, 5000.0),
              lambda n: rng.integers(1000, 1010, n).astype(float),
              lambda n: rng.exponential(3000, n) + 2000,
              lambda n: rng.pareto(3, n) * 1000 + 1000]
    for i in range(60):
        x = shapes[i % len(shapes)](int(rng.choice([900, 1500, 5000, 20000])))
        lo, hi = bucket_bounds(np.maximum(x, 1).astype(np.int64))
        mids, counts = np.unique((lo + hi) / 2, return_counts=True)
        e = estimate_tail(mids / 1000, counts)
        assert e.ok or e.refused, e
        if e.ok:
            assert e.ci_low <= e.value and (e.ci_high is None or e.value <= e.ci_high)
            assert e.value >= mids.max() / 1000 * 0.5


def test_the_fit_test_agrees_with_scipys_kolmogorov_smirnov():
    # The fit's KS p-value (Stephens' corrected limiting distribution) against scipy's exact one, for
    # weighted samples as histograms give them, drawn from the fitted GPD and from others.
    rng = np.random.default_rng(5)
    for n, tolerance in ((50, 0.02), (200, 0.012), (2000, 0.005)):
        for trial in range(30):
            xi, sigma = rng.choice([-0.3, 0.0, 0.2, 0.5]), rng.uniform(0.5, 3)
            drawn = stats.genpareto(xi * (1 + 0.5 * (trial % 3)), scale=sigma).rvs(n, random_state=rng)
            values, counts = np.unique(np.round(drawn, 4), return_counts=True)
            want = stats.kstest(np.repeat(values, counts), stats.genpareto(xi, loc=0, scale=sigma).cdf).pvalue
            assert _ks_p(values, counts.astype(float), xi, sigma) == pytest.approx(want, abs=tolerance), (n, trial)
            assert np.allclose(_gpd_cdf(values, xi, sigma), stats.genpareto(xi, scale=sigma).cdf(values))


def test_the_fit_finds_scipys_maximum_likelihood_and_the_true_parameters():
    # The fit's own search (no scipy.optimize) against scipy's maximum-likelihood fit of the same
    # excesses, weighted as histograms give them, and both against the shape and scale drawn from.
    rng = np.random.default_rng(6)
    for xi in (-0.4, -0.2, 0.0, 0.2, 0.45, 0.8, 1.3):
        for n in (60, 2000):
            drawn = stats.genpareto(xi, scale=3.0).rvs(n, random_state=rng)
            values, counts = np.unique(np.round(drawn, 3), return_counts=True)
            values, counts = values[values > 0], counts[values > 0].astype(float)
            shape, scale, lik = _fit(values, counts)
            theirs, _, their_scale = stats.genpareto.fit(np.repeat(values, counts.astype(int)), floc=0)
            assert shape == pytest.approx(theirs, abs=1e-3) and scale == pytest.approx(their_scale, rel=1e-3)
            assert lik >= _loglik(values, counts, theirs, their_scale) - 1e-6
            if n == 2000:        # standard errors of about 0.03 in the shape and 3 % in the scale
                assert shape == pytest.approx(xi, abs=0.15) and scale == pytest.approx(3.0, rel=0.15)


def test_kolmogorovs_distribution_is_scipys():
    from scipy.special import kolmogorov
    for y in np.concatenate([np.linspace(0, 3, 301), [1e-3, 0.999999, 1.000001, 8.0]]):
        assert kolmogorov_sf(y) == pytest.approx(float(kolmogorov(y)), abs=1e-12, rel=1e-9), y


@pytest.mark.parametrize("shape, moment", [(0.8, "no finite variance"), (1.3, "no finite mean")])
def test_a_tail_too_heavy_to_extrapolate_is_refused_with_no_number(shape, moment):
    # Pareto-like samples as the user's run had (a fitted shape of 1.28): no value and no interval.
    for seed in range(3):
        e = estimate_tail(LOC + stats.genpareto(shape, scale=SIGMA).rvs(200_000, random_state=seed))
        assert not e.ok and e.value is None and e.ci_low is None and e.ci_high is None
        assert f"is {MAX_SHAPE} or more: a tail with {moment}" in e.refused, e.refused
        assert e.shape == pytest.approx(shape, abs=0.1)


def test_an_exponential_tail_is_estimated_near_its_true_quantile():
    # Exponential excesses (shape 0): the 1 - 10^-6 quantile is LOC + SIGMA ln(10^6) exactly.
    true = LOC + SIGMA * np.log(1e6)
    for seed in range(10):
        e = estimate_tail(LOC + np.random.default_rng(seed).exponential(SIGMA, 200_000))
        assert e.ok, e.refused
        assert e.value == pytest.approx(true, rel=0.15) and e.ci_low <= e.value <= e.ci_high
        assert e.ci_high / e.ci_low < MAX_CI_RATIO


def test_an_interval_of_more_than_two_orders_of_magnitude_is_refused():
    # 5000 samples, 50 excesses, extrapolated 200 times beyond them: the shape is barely known.
    refused = [estimate_tail(_gpd(seed, 5000)) for seed in range(40)]
    wide = [e for e in refused if e.refused and "times its lower end" in e.refused]
    assert wide and all(e.value is None and e.ci_high is None for e in wide)
    assert all(e.ci_high <= MAX_CI_RATIO * e.ci_low for e in refused if e.ok)
