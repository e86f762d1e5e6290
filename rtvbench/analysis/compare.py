"""Overhead of a candidate against a baseline: ratio of medians, its interval, and a verdict.

The unit of observation is one repetition's figure (e.g. its p99): repetitions are independent
runs, the samples inside one run are not (they share a boot, a cache state, a load phase), so
only repetitions may be resampled.

Verdicts:
- "equivalent": no difference larger than the equivalence margin (the campaign's
  `equivalence_percent`, 10 % unless set): both one-sided tests against the margin pass, i.e. the
  90 % interval of the ratio lies inside [1 / (1 + margin), 1 + margin] (two one-sided tests).
  Only this verdict supports "no measurable difference". It wins over "significant": a difference
  that is shown but smaller than the margin is, by the campaign's own definition, no difference
  that matters.
- "significant": the two differ. Mann-Whitney U below ALPHA and a bootstrap interval of the ratio
  of medians that excludes 1, when the design lets a rank test reach ALPHA at all (4 vs 4, or
  3 vs 5, and more). Smaller designs cannot: an exact rank test of 3 vs 3 never goes below
  p = 0.1. There Welch's t-test on the logarithms of the values decides (the figures are positive
  times or rates whose spread scales with their size), and the report says so.
- "cannot tell": neither. The interval and the repetitions are reported with an estimate of the
  repetitions per side that would decide, from the observed spread.
- "insufficient data" (fewer than MIN_SAMPLES per side) and "undefined" (a zero baseline median).

Overhead is signed so that positive always means worse, each figure's direction coming from its
kind (`Kind.lower_is_better`): for a time or a count, how much larger the candidate's median is
(ratio - 1); for a bandwidth or a rate, the share of the baseline's that is lost (1 - ratio). So a
bandwidth that halves is a +50 % overhead, a wake-up latency that doubles a +100 % one, and one
`max_percent` bound means the same for both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

# Student's t comes from scipy.special rather than scipy.stats: importing scipy.stats cost a report
# about 0.3 s and 45 MB (the Mann-Whitney test below is our own for the same reason). scipy.special
# itself (0.15 s) is imported by the test that uses it: `show`, which decodes figures through modules
# that import this one, compares nothing.

from rtvbench.analysis.dataset import RunData
from rtvbench.analysis.no_value import no_value_reason

ALPHA = 0.05
CONFIDENCE = 1 - ALPHA
#: the power a repetition estimate aims at
POWER = 0.8
#: fewer repetitions than this per side cannot support an interval or a test worth printing
MIN_SAMPLES = 3
#: the equivalence margin in percent when the campaign sets none
DEFAULT_EQUIVALENCE_PERCENT = 10.0
#: an estimate above this is said as "more than"
MAX_ESTIMATE = 10_000
BOOTSTRAP_RESAMPLES = 5000
#: fixed so that the same data always gives the same report
BOOTSTRAP_SEED = 20240601

SIGNIFICANT = "significant"
EQUIVALENT = "equivalent"
CANNOT_TELL = "cannot tell"
INSUFFICIENT = "insufficient data"
UNDEFINED = "undefined"
NO_DATA = "no data"              # a side has no value of the figure: Comparison.no_data says why          # the baseline median is 0: a ratio does not exist

_Z = NormalDist().inv_cdf        # the standard normal quantile

#: how the verdict was reached
RANK = "Mann-Whitney U and a bootstrap interval of the ratio of medians"
LOG_T = "Welch's t-test on log values (too few repetitions for a rank test)"
#: the test behind a p-value, as a column heading names it
P_TEST_NAME = {RANK: "Mann-Whitney", LOG_T: "Welch t on logs"}


def p_heading(tests: list[RatioTest | None]) -> str:
    """A p-value column's heading names the test its values came from; when the rows' tests differ
    it is a bare "p" and each value marked "(t)" came from Welch's test (`p_text`)."""
    methods = {t.method for t in tests if t is not None and t.p_value is not None}
    return f"p ({P_TEST_NAME[methods.pop()]})" if len(methods) == 1 else "p"


def p_text(t: RatioTest | None, marked: bool = True) -> str:
    """A p-value with "(t)" when Welch's test produced it (`marked` False: the heading names the test)."""
    if t is None or t.p_value is None:
        return "–"
    return f"{t.p_value:.3g}" + (" (t)" if marked and t.method == LOG_T else "")


@dataclass
class RatioTest:
    n_baseline: int
    n_candidate: int
    baseline_median: float | None
    candidate_median: float | None
    ratio: float | None             # candidate median / baseline median
    ci_low: float | None            # 95 % interval of the ratio (see `method`)
    ci_high: float | None
    p_value: float | None           # two-sided, of the test `method` names
    verdict: str
    method: str = RANK
    margin_percent: float = DEFAULT_EQUIVALENCE_PERCENT
    # the 90 % interval the equivalence test reads
    equivalence_low: float | None = None
    equivalence_high: float | None = None
    # for "cannot tell": repetitions per side that would likely decide, from the observed spread
    # (None: no estimate, e.g. a spread of zero or values that are not all positive)
    needed_repetitions: int | None = None
    # the figure's direction: a time gets worse as it grows, a bandwidth as it shrinks
    lower_is_better: bool = True

    def _signed(self, ratio: float) -> float:
        return (ratio - 1) * 100 if self.lower_is_better else (1 - ratio) * 100

    @property
    def p_test(self) -> str | None:
        """The short name of the test the p value came from, as a p column's heading gives it."""
        return P_TEST_NAME.get(self.method) if self.p_value is not None else None

    @property
    def difference(self) -> float | None:
        """Candidate median less baseline median, in the figure's unit (None without both)."""
        if self.baseline_median is None or self.candidate_median is None:
            return None
        return self.candidate_median - self.baseline_median

    @property
    def overhead_percent(self) -> float | None:
        """Positive means worse (see the module's note)."""
        return None if self.ratio is None else self._signed(self.ratio)

    @property
    def ci_percent(self) -> tuple[float, float] | None:
        """The 95 % interval of the overhead, low to high."""
        if self.ci_low is None or self.ci_high is None:
            return None
        return tuple(sorted((self._signed(self.ci_low), self._signed(self.ci_high))))

    @property
    def worse(self) -> bool | None:
        """Whether the candidate's median is the worse one (None: no ratio, or equal)."""
        pct = self.overhead_percent
        return None if pct is None or pct == 0 else pct > 0

    def needed_words(self) -> str:
        """"about 12 repetitions per side would decide", or ""."""
        n = self.needed_repetitions
        if n is None:
            return ""
        if n > MAX_ESTIMATE:
            return f"more than {MAX_ESTIMATE:,} repetitions per side would be needed to decide"
        return f"about {n} repetitions per side would decide"


def smallest_rank_p(n: int, m: int) -> float:
    """The smallest two-sided p-value of an exact Mann-Whitney test of n vs m distinct values:
    complete separation, 2 of the C(n + m, n) equally likely orderings (3 vs 3: 0.1)."""
    return min(1.0, 2 / math.comb(n + m, n)) if n and m else 1.0


def bootstrap_ratio_ci(baseline, candidate, rng: np.random.Generator,
                       resamples: int = BOOTSTRAP_RESAMPLES,
                       confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Percentile bootstrap interval of median(candidate) / median(baseline)."""
    return _percentile_interval(_bootstrap_ratios(baseline, candidate, rng, resamples), confidence)


def _bootstrap_ratios(baseline, candidate, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """Sorted resampled ratios median(candidate) / median(baseline).

    Each side is resampled on its own (two independent samples). Resampled
    ratios with a zero baseline median are +inf, or 1 when both medians are
    zero (equal), so intervals are taken by order statistics rather than by
    interpolation, which infinities would poison.
    """
    b = np.asarray(baseline, dtype=float)
    c = np.asarray(candidate, dtype=float)
    med_b = _row_medians(b[rng.integers(0, len(b), size=(resamples, len(b)))])
    med_c = _row_medians(c[rng.integers(0, len(c), size=(resamples, len(c)))])
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = med_c / med_b
    ratios[(med_b == 0) & (med_c == 0)] = 1.0
    ratios[(med_b == 0) & (med_c != 0)] = np.inf * np.sign(med_c[(med_b == 0) & (med_c != 0)])
    ratios.sort()
    return ratios


def _row_medians(a: np.ndarray) -> np.ndarray:
    """np.median(a, axis=1), by sorting the rows: for rows of a few dozen values a sort is about
    three times faster than median's partition, and the bootstrap takes thousands of them."""
    s = np.sort(a, axis=1)
    n = a.shape[1]
    return s[:, n // 2] if n % 2 else (s[:, n // 2 - 1] + s[:, n // 2]) / 2


def _percentile_interval(ratios: np.ndarray, confidence: float) -> tuple[float, float]:
    tail = (1 - confidence) / 2
    lo = ratios[int(math.floor(tail * len(ratios)))]
    hi = ratios[int(math.ceil((1 - tail) * len(ratios))) - 1]
    return float(lo), float(hi)


def mann_whitney_p(baseline, candidate) -> float | None:
    """Two-sided Mann-Whitney U p-value.

    The exact null distribution of U when a side has 8 values or fewer and no value repeats (where
    the normal approximation is poorest); otherwise the normal approximation with the tie
    correction of the variance and a continuity correction of 1/2. These are the textbook test's
    usual choices, and scipy.stats.mannwhitneyu's with method="auto": the tests check this against
    it and against a brute-force permutation computation. Our own because importing scipy.stats
    costs every report about 0.3 s and 45 MB, more than all its comparisons together.
    """
    a = [float(x) for x in baseline]
    b = [float(x) for x in candidate]
    if not a or not b:
        return None
    if len(set(a) | set(b)) == 1:
        return 1.0      # every value equal: no evidence of a difference (avoids a 0/0 in the z-score)
    n1, n2 = len(a), len(b)
    values, index, ties = np.unique(np.array(a + b), return_inverse=True, return_counts=True)
    midranks = np.cumsum(ties) - (ties - 1) / 2         # tied values share the mean of their ranks
    u1 = float(midranks[index[:n1]].sum()) - n1 * (n1 + 1) / 2
    u = max(u1, n1 * n2 - u1)                            # the larger U: the two-sided p doubles its tail
    if min(n1, n2) <= 8 and ties.max() == 1:
        counts = _u_counts(min(n1, n2), max(n1, n2))
        p = 2 * sum(counts[int(u):]) / sum(counts)
    else:
        n = n1 + n2
        sd = math.sqrt(n1 * n2 / 12 * ((n + 1) - float((ties ** 3 - ties).sum()) / (n * (n - 1))))
        z = (u - n1 * n2 / 2 - 0.5) / sd
        p = math.erfc(z / math.sqrt(2))                  # 2 * P(Z > z), exact far into the tail
    return min(1.0, p)


def _u_counts(small: int, large: int) -> list[int]:
    """How many of the C(small + large, small) orderings of two samples give U = 0, 1, ... small * large:
    the coefficients of the Gaussian binomial prod_k (1 - q^(large + k)) / (1 - q^k), k = 1..small, in
    exact integers. Series are cut after q^(small * large), where the product is a polynomial."""
    top = small * large
    c = [1] + [0] * top
    for k in range(1, small + 1):
        for i in range(k, top + 1):                      # divide by (1 - q^k): a running sum with stride k
            c[i] += c[i - k]
        m = large + k
        for i in range(top, m - 1, -1):                  # multiply by (1 - q^m), high terms first
            c[i] -= c[i - m]
    return c


@dataclass
class _LogT:
    """Welch's t on log values: the log of the ratio of geometric means, its standard error and
    degrees of freedom, and the pooled spread of the logs (for repetition estimates)."""
    diff: float
    se: float
    df: float
    spread: float

    def p_value(self) -> float:
        if self.se == 0:
            return 1.0 if self.diff == 0 else 0.0
        from scipy.special import stdtr
        return float(2 * stdtr(self.df, -abs(self.diff) / self.se))

    def interval(self, confidence: float) -> tuple[float, float]:
        from scipy.special import stdtrit
        half = 0.0 if self.se == 0 else float(stdtrit(self.df, 1 - (1 - confidence) / 2)) * self.se
        return math.exp(self.diff - half), math.exp(self.diff + half)


def _log_t(b: list[float], c: list[float]) -> _LogT | None:
    """None unless every value is positive (a log needs it) and each side has two or more."""
    if min(len(b), len(c)) < 2 or min(b + c) <= 0:
        return None
    lb, lc = np.log(b), np.log(c)
    vb, vc = float(np.var(lb, ddof=1)), float(np.var(lc, ddof=1))
    se2 = vb / len(b) + vc / len(c)
    if se2 == 0:
        df = float(len(b) + len(c) - 2)
    else:
        df = se2 ** 2 / ((vb / len(b)) ** 2 / (len(b) - 1) + (vc / len(c)) ** 2 / (len(c) - 1))
    spread = math.sqrt(((len(b) - 1) * vb + (len(c) - 1) * vc) / (len(b) + len(c) - 2))
    return _LogT(float(np.mean(lc) - np.mean(lb)), math.sqrt(se2), df, spread)


def _needed(stats: _LogT | None, margin: float) -> int | None:
    """Repetitions per side that would give POWER to decide, from the observed spread of the logs
    and the observed ratio: to show the difference (if it is there), or to show equivalence (if it
    is inside the margin); the smaller of the two."""
    if stats is None or stats.spread == 0:
        return None
    effect, bound = abs(stats.diff), math.log1p(margin)
    z_beta = float(_Z(POWER))
    options = []
    if effect > 0:
        options.append(2 * ((float(_Z(1 - ALPHA / 2)) + z_beta) * stats.spread / effect) ** 2)
    if effect < bound:
        options.append(2 * ((float(_Z(1 - ALPHA)) + z_beta) * stats.spread / (bound - effect)) ** 2)
    return max(MIN_SAMPLES, math.ceil(min(options))) if options else None


def ratio_test(baseline, candidate, seed: int = BOOTSTRAP_SEED,
               margin_percent: float = DEFAULT_EQUIVALENCE_PERCENT, lower_is_better: bool = True) -> RatioTest:
    """Compare two sets of per-repetition values (see the module's note on the verdicts)."""
    test = _ratio_test(baseline, candidate, seed, margin_percent)
    test.lower_is_better = lower_is_better
    return test


def _ratio_test(baseline, candidate, seed: int, margin_percent: float) -> RatioTest:
    b = [float(x) for x in baseline]
    c = [float(x) for x in candidate]
    med_b = float(np.median(b)) if b else None
    med_c = float(np.median(c)) if c else None
    if med_b is None or med_c is None:
        return RatioTest(len(b), len(c), med_b, med_c, None, None, None, None, INSUFFICIENT,
                         margin_percent=margin_percent)
    enough = min(len(b), len(c)) >= MIN_SAMPLES
    if med_b == 0 and med_c != 0:
        return RatioTest(len(b), len(c), med_b, med_c, None, None, None,
                         mann_whitney_p(b, c) if enough else None, UNDEFINED, margin_percent=margin_percent)
    ratio = 1.0 if med_b == 0 else med_c / med_b     # both medians zero: equal
    if not enough:
        return RatioTest(len(b), len(c), med_b, med_c, ratio, None, None, None, INSUFFICIENT,
                         margin_percent=margin_percent)
    margin = margin_percent / 100
    stats = _log_t(b, c)
    if smallest_rank_p(len(b), len(c)) < ALPHA or stats is None:
        method = RANK
        # one set of resamples for both intervals: the same seed gave the same resamples twice
        ratios = _bootstrap_ratios(b, c, np.random.default_rng(seed), BOOTSTRAP_RESAMPLES)
        lo, hi = _percentile_interval(ratios, CONFIDENCE)
        eq_lo, eq_hi = _percentile_interval(ratios, 1 - 2 * ALPHA)
        p = mann_whitney_p(b, c)
        significant = p is not None and p < ALPHA and not (lo <= 1.0 <= hi)
    else:
        method = LOG_T
        lo, hi = stats.interval(CONFIDENCE)
        eq_lo, eq_hi = stats.interval(1 - 2 * ALPHA)
        p = stats.p_value()
        significant = p < ALPHA
    equivalent = 1 / (1 + margin) <= eq_lo and eq_hi <= 1 + margin
    verdict = EQUIVALENT if equivalent else SIGNIFICANT if significant else CANNOT_TELL
    needed = _needed(stats, margin) if verdict == CANNOT_TELL else None
    return RatioTest(len(b), len(c), med_b, med_c, ratio, lo, hi, p, verdict, method, margin_percent,
                     eq_lo, eq_hi, needed)


@dataclass
class Comparison:
    benchmark: str
    figure: str
    axis: str              # "environment" (same load) or "load" (same environment)
    context: str           # the load held fixed for an environment comparison, or the environment for a load one
    baseline: str
    candidate: str
    test: RatioTest
    # from the campaign's [[comparisons]] rather than the defaults (against the first environment or the
    # idle load): code that reads "the" baseline's comparisons leaves these out
    declared: bool = False
    #: why a side has no value of the figure at all ("`guest / idle`: fork_sh skipped: ..."), else None:
    #: such a pair is no comparison, and says so instead of comparing 0 values with 0
    no_data: str | None = None

    @property
    def verdict(self) -> str:
        return NO_DATA if self.no_data else self.test.verdict

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
    """Ratio test of one figure between two (environment, load) cells, with the campaign's margin and
    the figure's direction."""
    kind = data.kind(benchmark)
    return ratio_test(data.values(*baseline, benchmark, figure), data.values(*candidate, benchmark, figure),
                      margin_percent=data.spec.equivalence_percent,
                      lower_is_better=kind.lower_is_better(figure) if kind is not None else True)


def comparisons(data: RunData) -> list[Comparison]:
    """Every environment against the baseline environment (per load), every load against the baseline load
    (per environment), for each benchmark's comparison figures; then the campaign's [[comparisons]] that
    these do not already hold."""
    out = []
    for bench in data.benchmarks:
        kind = data.kind(bench)
        if kind is None:
            continue
        cells = set(data.cells(bench))
        base_env, base_load = data.baseline_environment, data.baseline_load
        figures = kind.compared_figures(data.figure_names(bench))
        pairs = [("environment", load, base_env, env) for load in data.loads for env in data.environments
                 if env != base_env]
        pairs += [("load", env, base_load, load) for env in data.environments for load in data.loads
                  if load != base_load]
        # A declared pair that a default (or an earlier declaration) already compares is not doubled.
        defaults = set(pairs)
        declared = [p for p in dict.fromkeys(_declared_pairs(data, bench)) if p not in defaults]
        for (axis, context, baseline, candidate), is_declared in ([(p, False) for p in pairs]
                                                                  + [(p, True) for p in declared]):
            base_cell, cand_cell = ((baseline, context), (candidate, context)) if axis == "environment" \
                else ((context, baseline), (context, candidate))
            if base_cell not in cells or cand_cell not in cells:
                continue
            for figure in figures:
                t = compare_cells(data, bench, figure, base_cell, cand_cell)
                empty = [cell for cell, n in ((base_cell, t.n_baseline), (cand_cell, t.n_candidate)) if n == 0]
                out.append(Comparison(bench, figure, axis, context, baseline, candidate, t, is_declared,
                                      "; ".join(f"`{e} / {ld}`: {no_value_reason(data, e, ld, bench, figure)}"
                                                for e, ld in empty) or None))
    return out


def _declared_pairs(data: RunData, bench: str) -> list[tuple[str, str, str, str]]:
    """(axis, context, baseline, candidate) of each [[comparisons]] entry that applies to `bench`; names
    the run does not have (a stored campaign edited since) are left out."""
    out = []
    for decl in data.spec.comparisons:
        if not isinstance(decl, dict) or bench not in (decl.get("benchmarks") or [bench]):
            continue
        base, cand = decl.get("baseline"), decl.get("candidate")
        if base in data.environments and cand in data.environments:
            out += [("environment", load, base, cand) for load in (decl.get("loads") or data.loads)
                    if load in data.loads]
        elif base in data.loads and cand in data.loads:
            out += [("load", env, base, cand) for env in (decl.get("environments") or data.environments)
                    if env in data.environments]
    return out
