"""Overhead statistics against known answers: bootstrap coverage, Mann-Whitney p-values, verdicts."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import mannwhitneyu, rankdata

from rtvbench.analysis.compare import (CANNOT_TELL, EQUIVALENT, INSUFFICIENT, LOG_T, RANK, SIGNIFICANT,
                                       UNDEFINED, _row_medians, smallest_rank_p,
                                       bootstrap_ratio_ci, mann_whitney_p, ratio_test)


# Expected interval width from the large-sample standard error of a median, 1.2533 * sd / sqrt(n),
# propagated to the ratio (delta method): the bootstrap interval should be about this wide, not wider.
def _expected_width(ratio, rel_sd_b, rel_sd_c, n):
    return 2 * 1.96 * ratio * 1.2533 * np.hypot(rel_sd_b, rel_sd_c) / np.sqrt(n)


@pytest.mark.parametrize("n, draw, true_ratio, width", [
    (10, lambda rng, n: (rng.lognormal(np.log(10), 0.3, n), rng.lognormal(np.log(13), 0.3, n)), 1.3,
     _expected_width(1.3, 0.3, 0.3, 10)),
    (20, lambda rng, n: (rng.normal(50, 5, n), rng.normal(55, 5, n)), 1.1,
     _expected_width(1.1, 5 / 50, 5 / 55, 20)),
])
def test_bootstrap_ci_covers_true_ratio_of_medians(n, draw, true_ratio, width):
    rng = np.random.default_rng(2024)
    trials, covered, widths = 200, 0, []
    for i in range(trials):
        b, c = draw(rng, n)
        lo, hi = bootstrap_ratio_ci(b, c, np.random.default_rng(i))
        covered += lo <= true_ratio <= hi
        widths.append(hi - lo)
    coverage = covered / trials
    assert 0.90 <= coverage <= 0.99, coverage
    # Coverage alone would accept an uninformative interval; it must also be about as tight as theory says.
    assert 0.5 * width < np.median(widths) < 1.5 * width, (np.median(widths), width)


def _permutation_p(a, b) -> float:
    """Exact two-sided permutation p-value of U, by enumerating every split (test oracle)."""
    pooled = np.concatenate([a, b]).astype(float)
    ranks = rankdata(pooled)
    n1, n = len(a), len(pooled)
    mean = n1 * (n - n1) / 2
    u_obs = ranks[:n1].sum() - n1 * (n1 + 1) / 2
    u_all = np.array([ranks[list(idx)].sum() - n1 * (n1 + 1) / 2 for idx in itertools.combinations(range(n), n1)])
    return float(np.mean(np.abs(u_all - mean) >= abs(u_obs - mean) - 1e-9))


CASES = [
    ([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]),
    ([3.1, 4.7, 2.2, 5.9, 4.0], [6.3, 5.5, 7.1, 4.8, 8.0, 6.6]),
    ([10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0], [12.5, 13.5, 17.0, 18.0, 19.0, 20.0, 21.0]),
    ([1, 2, 2, 3, 3, 3, 4, 5, 6, 6], [3, 4, 4, 5, 5, 6, 7, 7, 8, 9]),           # ties
    ([5, 5, 5, 6, 6, 7, 7, 8, 9], [5, 6, 6, 7, 8, 8, 9, 9, 10]),  # heavy ties
    (list(np.random.default_rng(1).normal(0, 1, 40)), list(np.random.default_rng(2).normal(0.5, 1, 35))),
]


@pytest.mark.parametrize("a, b", CASES)
def test_mann_whitney_matches_scipy_two_sided_with_continuity(a, b):
    want = mannwhitneyu(a, b, alternative="two-sided", use_continuity=True, method="auto").pvalue
    assert mann_whitney_p(a, b) == pytest.approx(want, abs=1e-12)
    assert mann_whitney_p(b, a) == pytest.approx(want, abs=1e-12)      # two-sided: symmetric


def test_row_medians_are_numpys_medians():
    rng = np.random.default_rng(3)
    for n in (1, 2, 3, 8, 30, 31):
        a = rng.normal(size=(200, n))
        assert np.array_equal(_row_medians(a), np.median(a, axis=1)), n


def test_mann_whitney_matches_scipy_on_random_samples():
    # Sizes on both sides of the exact/approximate switch (8), rounded draws for ties, a shift or none,
    # and one small side against a large one (the exact distribution over many orderings).
    rng = np.random.default_rng(7)
    sizes = [(1, 1), (1, 5), (2, 2), (3, 9), (5, 5), (8, 8), (8, 9), (9, 9), (6, 40), (12, 15), (30, 30), (8, 300)]
    for n1, n2 in sizes:
        for trial in range(12):
            scale = (1, 4, 1000)[trial % 3]           # rounding to 1/scale: many, some, no ties
            a = np.round(rng.normal(0, 1, n1) * scale) / scale
            b = np.round(rng.normal(0.7 * (trial % 2), 1, n2) * scale) / scale
            if len(set(a) | set(b)) == 1:
                continue
            want = mannwhitneyu(a, b, alternative="two-sided", use_continuity=True, method="auto").pvalue
            got = mann_whitney_p(a, b)
            assert got == pytest.approx(want, rel=1e-9, abs=1e-14), (n1, n2, trial, list(a), list(b))


@pytest.mark.parametrize("a, b", CASES[:3])
def test_mann_whitney_is_exact_for_small_samples_without_ties(a, b):
    assert mann_whitney_p(a, b) == pytest.approx(_permutation_p(a, b), abs=1e-9)


@pytest.mark.parametrize("a, b", CASES[3:5])
def test_mann_whitney_with_ties_is_close_to_the_exact_permutation_p(a, b):
    # With ties scipy uses the tie-corrected normal approximation; at n = 10-12 it is within a few 0.01.
    assert mann_whitney_p(a, b) == pytest.approx(_permutation_p(a, b), abs=0.03)


def test_mann_whitney_degenerate_inputs():
    assert mann_whitney_p([5, 5, 5], [5, 5, 5]) == 1.0
    assert mann_whitney_p([], [1, 2]) is None


def test_ratio_test_verdicts():
    base = [10.0, 10.2, 9.9, 10.1, 10.05, 9.95]
    t = ratio_test(base, [15.0, 15.3, 14.8, 15.1, 15.2, 14.9])
    assert t.verdict == SIGNIFICANT
    assert t.overhead_percent == pytest.approx((15.05 / 10.025 - 1) * 100)
    assert t.ci_percent[0] > 0 and t.ci_percent[0] <= t.overhead_percent <= t.ci_percent[1]

    same = ratio_test(base, [10.1, 9.9, 10.0, 10.2, 9.95, 10.05])
    assert same.verdict == EQUIVALENT and same.ci_low <= 1.0 <= same.ci_high
    assert 1 / 1.1 <= same.equivalence_low <= same.equivalence_high <= 1.1

    # A rank test of 3 vs 3 cannot go below p = 0.1: Welch's t on the logs decides instead.
    three = ratio_test([1.0, 1.1, 1.2], [2.0, 2.1, 2.2])
    assert three.verdict == SIGNIFICANT and three.method == LOG_T and three.p_value < 0.01
    assert three.ci_low > 1.5

    few = ratio_test([1.0, 1.1], [2.0, 2.1, 2.2])
    assert few.verdict == INSUFFICIENT and few.ratio == pytest.approx(2.1 / 1.05) and few.ci_low is None

    zero = ratio_test([0, 0, 0, 1], [3, 4, 5, 6])
    assert zero.verdict == UNDEFINED and zero.ratio is None


def test_ratio_test_is_reproducible():
    rng = np.random.default_rng(3)
    a, b = rng.normal(10, 1, 8), rng.normal(11, 1, 8)
    assert ratio_test(a, b) == ratio_test(a, b)


# -- verdicts a sign-off can rest on ----------------------------------------------------------


def test_one_percent_apart_with_ten_repetitions_is_equivalent_within_five_percent():
    # Even when the 1 % is real and shown: it is inside the margin the campaign declared.
    rng = np.random.default_rng(11)
    base = 100 * np.exp(rng.normal(0, 0.01, 10))
    cand = 100 * np.exp(rng.normal(0, 0.01, 10)) * 1.01
    t = ratio_test(base, cand, margin_percent=5)
    assert t.verdict == EQUIVALENT and t.method == RANK, t
    assert 1 / 1.05 <= t.equivalence_low and t.equivalence_high <= 1.05


def test_a_wide_spread_with_three_repetitions_cannot_tell_and_says_how_many_would():
    t = ratio_test([10.0, 30.0, 12.0], [25.0, 11.0, 40.0], margin_percent=10)
    assert t.verdict == CANNOT_TELL and t.method == LOG_T
    assert t.ci_low < 1 < t.ci_high
    # The estimate from the observed spread: enough to decide, and far more than 3.
    assert 10 < t.needed_repetitions < 10_000
    assert f"about {t.needed_repetitions} repetitions per side would decide" == t.needed_words()


def test_three_against_three_ten_times_slower_is_significant():
    rng = np.random.default_rng(5)
    base = 10 * np.exp(rng.normal(0, 0.1, 3))
    t = ratio_test(base, 10 * base[::-1] * np.exp(rng.normal(0, 0.1, 3)))
    assert smallest_rank_p(3, 3) == pytest.approx(0.1)
    assert t.verdict == SIGNIFICANT and t.method == LOG_T and 5 < t.ci_low and t.ci_high < 20


def test_equivalence_needs_the_interval_inside_the_margin_not_just_a_large_p():
    # 5 vs 5, centred on the baseline but spread +-50 %: nothing significant, nothing shown either.
    t = ratio_test([100, 150, 60, 120, 80], [90, 140, 70, 130, 100], margin_percent=10)
    assert t.verdict == CANNOT_TELL and t.p_value > 0.05 and t.needed_repetitions > 5
    # The same data with a margin wider than its interval is equivalent.
    wide = ratio_test([100, 150, 60, 120, 80], [90, 140, 70, 130, 100], margin_percent=100)
    assert wide.verdict == EQUIVALENT
