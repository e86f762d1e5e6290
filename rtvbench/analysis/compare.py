"""Overhead of a candidate against a baseline: ratio of medians, bootstrap CI, Mann-Whitney U.

The unit of observation is one repetition's figure (e.g. its p99): repetitions
are independent runs, the samples inside one run are not (they share a boot, a
cache state, a load phase), so only repetitions may be resampled.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import mannwhitneyu

from rtvbench.analysis.dataset import RunData

ALPHA = 0.05
CONFIDENCE = 1 - ALPHA
#: fewer repetitions than this per side cannot support a CI or a rank test worth printing
MIN_SAMPLES = 3
BOOTSTRAP_RESAMPLES = 5000
#: fixed so that the same data always gives the same report
BOOTSTRAP_SEED = 20240601

SIGNIFICANT = "significant"
NOT_SIGNIFICANT = "not significant"
INSUFFICIENT = "insufficient data"
UNDEFINED = "undefined"          # the baseline median is 0: a ratio does not exist


@dataclass
class RatioTest:
    n_baseline: int
    n_candidate: int
    baseline_median: float | None
    candidate_median: float | None
    ratio: float | None             # candidate median / baseline median
    ci_low: float | None            # bootstrap percentile interval of the ratio
    ci_high: float | None
    p_value: float | None           # Mann-Whitney U, two-sided
    verdict: str

    @property
    def overhead_percent(self) -> float | None:
        return None if self.ratio is None else (self.ratio - 1) * 100

    @property
    def ci_percent(self) -> tuple[float, float] | None:
        if self.ci_low is None or self.ci_high is None:
            return None
        return ((self.ci_low - 1) * 100, (self.ci_high - 1) * 100)


def bootstrap_ratio_ci(baseline, candidate, rng: np.random.Generator,
                       resamples: int = BOOTSTRAP_RESAMPLES,
                       confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Percentile bootstrap interval of median(candidate) / median(baseline).

    Each side is resampled on its own (two independent samples). Resampled
    ratios with a zero baseline median are +inf, or 1 when both medians are
    zero (equal), so the interval is taken by order statistics rather than by
    interpolation, which infinities would poison.
    """
    b = np.asarray(baseline, dtype=float)
    c = np.asarray(candidate, dtype=float)
    med_b = np.median(b[rng.integers(0, len(b), size=(resamples, len(b)))], axis=1)
    med_c = np.median(c[rng.integers(0, len(c), size=(resamples, len(c)))], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = med_c / med_b
    ratios[(med_b == 0) & (med_c == 0)] = 1.0
    ratios[(med_b == 0) & (med_c != 0)] = np.inf * np.sign(med_c[(med_b == 0) & (med_c != 0)])
    ratios.sort()
    tail = (1 - confidence) / 2
    lo = ratios[int(math.floor(tail * resamples))]
    hi = ratios[int(math.ceil((1 - tail) * resamples)) - 1]
    return float(lo), float(hi)


def mann_whitney_p(baseline, candidate) -> float | None:
    """Two-sided Mann-Whitney U p-value.

    scipy's implementation is used rather than our own: scipy is already a
    dependency, its `method="auto"` gives the exact distribution for small
    samples without ties (n <= 8, where the normal approximation is poorest)
    and the tie- and continuity-corrected normal approximation otherwise, and
    it is widely reviewed. Our tests check this wrapper's choices (two-sided,
    continuity correction, exactness on small samples) against a brute-force
    permutation computation, not against scipy itself.
    """
    a = [float(x) for x in baseline]
    b = [float(x) for x in candidate]
    if not a or not b:
        return None
    if len(set(a) | set(b)) == 1:
        return 1.0      # every value equal: no evidence of a difference (avoids a 0/0 in the z-score)
    return float(mannwhitneyu(a, b, alternative="two-sided", use_continuity=True, method="auto").pvalue)


def ratio_test(baseline, candidate, seed: int = BOOTSTRAP_SEED) -> RatioTest:
    """Compare two sets of per-repetition values.

    "significant" needs both a rank test below ALPHA and a bootstrap interval
    of the ratio that excludes 1: the two answer different questions (any
    shift in distribution vs. a shift of the median) and a claim of overhead
    should survive both.
    """
    b = [float(x) for x in baseline]
    c = [float(x) for x in candidate]
    med_b = float(np.median(b)) if b else None
    med_c = float(np.median(c)) if c else None
    if med_b is None or med_c is None:
        return RatioTest(len(b), len(c), med_b, med_c, None, None, None, None, INSUFFICIENT)
    enough = min(len(b), len(c)) >= MIN_SAMPLES
    if med_b == 0 and med_c != 0:
        return RatioTest(len(b), len(c), med_b, med_c, None, None, None,
                         mann_whitney_p(b, c) if enough else None, UNDEFINED)
    ratio = 1.0 if med_b == 0 else med_c / med_b     # both medians zero: equal
    if not enough:
        return RatioTest(len(b), len(c), med_b, med_c, ratio, None, None, None, INSUFFICIENT)
    lo, hi = bootstrap_ratio_ci(b, c, np.random.default_rng(seed))
    p = mann_whitney_p(b, c)
    significant = p is not None and p < ALPHA and not (lo <= 1.0 <= hi)
    return RatioTest(len(b), len(c), med_b, med_c, ratio, lo, hi, p,
                     SIGNIFICANT if significant else NOT_SIGNIFICANT)


@dataclass
class Comparison:
    benchmark: str
    figure: str
    axis: str              # "environment" (same load) or "load" (same environment)
    context: str           # the load held fixed for an environment comparison, or the environment for a load one
    baseline: str
    candidate: str
    test: RatioTest

    @property
    def baseline_environment(self) -> str:
        return self.baseline if self.axis == "environment" else self.context

    @property
    def candidate_environment(self) -> str:
        return self.candidate if self.axis == "environment" else self.context

    @property
    def baseline_load(self) -> str:
        return self.context if self.axis == "environment" else self.baseline

    @property
    def candidate_load(self) -> str:
        return self.context if self.axis == "environment" else self.candidate


def compare_cells(data: RunData, benchmark: str, figure: str,
                  baseline: tuple[str, str], candidate: tuple[str, str]) -> RatioTest:
    """Ratio test of one figure between two (environment, load) cells."""
    return ratio_test(data.values(*baseline, benchmark, figure), data.values(*candidate, benchmark, figure))


def comparisons(data: RunData) -> list[Comparison]:
    """Every environment against the baseline environment (per load), every load against the baseline load
    (per environment), for each benchmark's comparison figures."""
    out = []
    for bench in data.benchmarks:
        kind = data.kind(bench)
        if kind is None:
            continue
        cells = set(data.cells(bench))
        base_env, base_load = data.baseline_environment, data.baseline_load
        for figure in kind.compared_figures(data.figure_names(bench)):
            for load in data.loads:
                for env in data.environments:
                    if env != base_env and (base_env, load) in cells and (env, load) in cells:
                        out.append(Comparison(bench, figure, "environment", load, base_env, env,
                                              compare_cells(data, bench, figure, (base_env, load), (env, load))))
            for env in data.environments:
                for load in data.loads:
                    if load != base_load and (env, base_load) in cells and (env, load) in cells:
                        out.append(Comparison(bench, figure, "load", env, base_load, load,
                                              compare_cells(data, bench, figure, (env, base_load), (env, load))))
    return out
