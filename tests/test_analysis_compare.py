"""Overhead statistics against known answers: bootstrap coverage, Mann-Whitney p-values, verdicts."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import mannwhitneyu, rankdata

from rtvbench.analysis.compare import (INSUFFICIENT, NOT_SIGNIFICANT, SIGNIFICANT, UNDEFINED,
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
    assert same.verdict == NOT_SIGNIFICANT and same.ci_low <= 1.0 <= same.ci_high

    # p < 0.05 cannot be reached with 3 vs 3 (exact minimum p = 0.1): never called significant
    three = ratio_test([1.0, 1.1, 1.2], [2.0, 2.1, 2.2])
    assert three.verdict == NOT_SIGNIFICANT and three.p_value == pytest.approx(0.1)

    few = ratio_test([1.0, 1.1], [2.0, 2.1, 2.2])
    assert few.verdict == INSUFFICIENT and few.ratio == pytest.approx(2.1 / 1.05) and few.ci_low is None

    zero = ratio_test([0, 0, 0, 1], [3, 4, 5, 6])
    assert zero.verdict == UNDEFINED and zero.ratio is None


def test_ratio_test_is_reproducible():
    rng = np.random.default_rng(3)
    a, b = rng.normal(10, 1, 8), rng.normal(11, 1, 8)
    assert ratio_test(a, b) == ratio_test(a, b)
