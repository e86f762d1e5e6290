"""What a latency tail supports: how far the samples reach, and an extreme-value estimate beyond them.

Coverage. N samples say nothing about events rarer than about 1 in N: the observed maximum is one
draw from the far tail, and a percentile q needs several samples above it to be more than the
maximum (we ask for MIN_BEYOND, so N >= MIN_BEYOND / (1 - q)).

Estimate. Peaks over threshold: above a high threshold u, the excesses of a wide class of
distributions follow a generalized Pareto distribution (GPD) with shape xi and scale sigma. Fitted
by maximum likelihood to the largest samples, it gives the latency exceeded with probability
10^-k per activation,

    x = u + sigma / xi * ((N / n_u * 10^-k)^(-xi) - 1)        (xi = 0: u + sigma * ln(n_u / (N 10^-k)))

with a 95 % profile-likelihood interval (the interval of x whose best fit is not significantly
worse than the overall best; it is asymmetric, as the uncertainty of an extrapolation is). The fit
is refused, with the reason, when there are too few samples, when the shape is below -0.5 (the
likelihood is not regular there; the tail is bounded, e.g. a uniform one), when it is 0.5 or more
(no finite variance: nothing the samples can extrapolate, see MAX_SHAPE), when a Kolmogorov-Smirnov
test rejects the fitted GPD for the excesses, or when the interval spans more than a factor 100. It is an estimate under a model,
never a measurement, and is labelled so wherever it is shown.

Samples may come with weights: the probe's histograms give bucket midpoints and counts, whose
relative resolution (1/256) is far finer than the uncertainty of a tail estimate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from rtvbench.analysis.scalar_search import maximize_on, root_between
from rtvbench.units import counted, verb


#: samples beyond a percentile for it to be more than the maximum
MIN_BEYOND = 10
#: fewest samples and fewest excesses a tail fit accepts
MIN_SAMPLES, MIN_EXCESSES = 1000, 50
#: the share of the samples the fit uses, within these counts
EXCESS_FRACTION, MAX_EXCESSES = 0.01, 2000
#: below this shape the maximum-likelihood estimate is not regular (and the tail is bounded)
MIN_SHAPE = -0.5
#: from this shape on the estimate is refused. At 0.5 the fitted tail has no finite variance (at 1 no
#: mean). A wake-up latency tail that heavy is rare long stalls of another cause than the bulk
#: (firmware, throttling, a task that preempts), whose size and rate the samples above the threshold
#: do not pin down, and the estimate 10^4 beyond a 1 % threshold grows as about (10^4)^xi: the model
#: error of the shape is multiplied by ln(10^4) = 9.2 in the estimate's logarithm. Below 0.5 the fit
#: and its interval describe the tail (the tests hold the interval to cover the true value).
MAX_SHAPE = 0.5
#: an interval whose upper end is more than this times its lower end is no estimate: two orders of
#: magnitude say no more than "worse than the samples, perhaps far worse", which the observed maximum
#: and the coverage already say. It refuses extrapolations from too few excesses (50 excesses of a
#: shape of 0.2 gave ratios up to 300) and leaves those over 200 or more excesses (below 30).
MAX_CI_RATIO = 100
#: a KS p-value below this rejects the fitted GPD
FIT_ALPHA = 0.01
#: the 95 % quantile of chi-squared with one degree of freedom, the square of the normal's 97.5 %
CHI2_95 = NormalDist().inv_cdf(0.975) ** 2


def covered(n_samples: int) -> str:
    """What N samples can say about rare events, in words."""
    if n_samples <= 0:
        return "no samples"
    return (f"events rarer than about 1 in {_order(n_samples)} are not covered")


def _order(n: int) -> str:
    """10^k at or below n, as written: 100 000, 10^6 ..."""
    k = int(math.floor(math.log10(n))) if n >= 1 else 0
    return f"{10 ** k:,}".replace(",", " ") if k < 6 else f"10^{k}"


def samples_needed(quantile: float) -> int:
    """Samples a percentile needs to be more than the maximum: MIN_BEYOND of them above it."""
    return math.ceil(round(MIN_BEYOND / (1 - quantile), 6))


@dataclass
class TailEstimate:
    exceedance: float                # the probability per sample the estimate is for (e.g. 1e-6)
    value: float | None              # the estimated latency, None when refused
    ci_low: float | None
    ci_high: float | None
    shape: float | None              # xi
    scale: float | None              # sigma
    threshold: float | None          # u
    n_samples: int
    n_excesses: int
    fit_p: float | None              # KS p-value of the fitted GPD on the excesses
    refused: str | None = None       # why there is no estimate

    @property
    def ok(self) -> bool:
        return self.refused is None


def _loglik(excess: np.ndarray, w: np.ndarray, xi: float, sigma: float) -> float:
    if sigma <= 0:
        return -math.inf
    if abs(xi) < 1e-9:
        return float(np.sum(w * (-math.log(sigma) - excess / sigma)))
    z = 1 + xi * excess / sigma
    if np.any(z <= 0):
        return -math.inf
    return float(np.sum(w * (-math.log(sigma) - (1 / xi + 1) * np.log(z))))


def _fit(excess: np.ndarray, w: np.ndarray) -> tuple[float, float, float]:
    """Maximum-likelihood (xi, sigma) and the log-likelihood, with xi at least -1 (below it the
    likelihood grows without bound as the scale approaches the largest excess).

    In theta = xi / sigma the likelihood's maximum over xi is closed form, xi(theta) = the mean of
    ln(1 + theta x), leaving one variable (Grimshaw's reduction): L(theta) = -W (ln(xi / theta) + xi + 1)
    for W samples. A grid over t = theta * max(x) finds the peak's neighbourhood, a golden-section
    search within it the peak; xi(theta) grows with theta, so xi >= -1 is theta above a bound. The
    grid reaches t = 10^12: the peak lies near n^xi for n excesses, 10^6.6 at a shape of 2 over 2000.
    Within 1e-6 of scipy's maximum-likelihood fit (the tests hold it to 1e-3)."""
    top = float(excess.max())
    total = float(w.sum())
    grid = np.unique(np.concatenate([np.logspace(-8, -0.3, 40) - 1, -np.logspace(-0.3, -6, 30), [0.0],
                                     np.logspace(-6, 12, 145)]))
    with np.errstate(divide="ignore", invalid="ignore"):
        shapes = (np.log1p(np.outer(grid / top, excess)) @ w) / total
    lik = np.array([_profile_theta(t / top, xi, excess, w, total) for t, xi in zip(grid, shapes)])
    i = int(np.argmax(lik))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]

    def along(t: float) -> float:
        return _profile_theta(t / top, float(np.log1p(t / top * excess) @ w) / total, excess, w, total)

    t, best = maximize_on(along, lo, hi, xtol=max(abs(grid[i]), 1e-6) * 1e-9)
    if lik[i] > best:
        t, best = grid[i], lik[i]
    theta = t / top
    if theta == 0:
        return 0.0, float(excess @ w) / total, best
    xi = float(np.log1p(theta * excess) @ w) / total
    return xi, xi / theta, best


def _profile_theta(theta: float, xi: float, excess: np.ndarray, w: np.ndarray, total: float) -> float:
    """The log-likelihood at theta = xi / sigma, xi given as the mean of ln(1 + theta x) (-inf where
    xi < -1 or outside the support)."""
    if theta == 0:
        return -total * (math.log(float(excess @ w) / total) + 1)
    if not math.isfinite(xi) or xi < -1 or xi == 0:
        return -math.inf
    return -total * (math.log(xi / theta) + xi + 1)


def _level(u: float, xi: float, sigma: float, rate: float, p: float) -> float:
    """The value exceeded with probability p, given P(X > u) = rate."""
    r = p / rate
    return u + (sigma * -math.log(r) if abs(xi) < 1e-9 else sigma / xi * (r ** -xi - 1))


def _sigma_for(level: float, u: float, xi: float, rate: float, p: float) -> float:
    """The scale that puts the p-level at `level` for shape xi (the profile's reparametrisation)."""
    r = p / rate
    return (level - u) / -math.log(r) if abs(xi) < 1e-9 else (level - u) * xi / (r ** -xi - 1)


def _profile(excess, w, level, u, rate, p) -> float:
    """The best log-likelihood among fits whose p-level is `level`."""
    def lik(xi):
        sigma = _sigma_for(level, u, xi, rate, p)
        return _loglik(excess, w, xi, sigma) if sigma > 0 else -math.inf
    return maximize_on(lik, MIN_SHAPE - 0.5, 2.0, xtol=1e-6)[1]


def estimate_tail(values, weights=None, exceedance: float = 1e-6) -> TailEstimate:
    """The latency exceeded with probability `exceedance` per sample, from `values` (with
    `weights`, counts per value), by a GPD fit over the largest ones (see the module note)."""
    x = np.asarray(values, dtype=float)
    w = np.ones_like(x) if weights is None else np.asarray(weights, dtype=float)
    keep = w > 0
    x, w = x[keep], w[keep]
    n = int(round(w.sum()))

    def refuse(why: str, **kw) -> TailEstimate:
        return TailEstimate(exceedance, None, None, None, kw.get("xi"), kw.get("sigma"), kw.get("u"), n,
                            kw.get("n_u", 0), kw.get("fit_p"), why)

    if n < MIN_SAMPLES:
        return refuse(f"{n:,} samples are too few for a tail fit (at least {MIN_SAMPLES:,})")
    order = np.argsort(x)
    x, w = x[order], w[order]
    wanted = min(max(EXCESS_FRACTION * n, MIN_EXCESSES), MAX_EXCESSES)
    # The threshold: the largest value with at least `wanted` samples strictly above it.
    above = np.cumsum(w[::-1])[::-1] - w              # samples strictly above each value
    candidates = np.nonzero(above >= wanted)[0]
    if len(candidates) == 0:
        return refuse("the samples take too few distinct values for a tail fit")
    i = int(candidates[-1])
    u = float(x[i])
    tail = x > u
    excess, tw = x[tail] - u, w[tail]
    n_u = int(round(tw.sum()))
    if n_u < MIN_EXCESSES:
        return refuse(f"only {counted(n_u, 'sample')} {verb(n_u, 'lies', 'lie')} above the threshold", u=u, n_u=n_u)
    if len(excess) < 5:
        return refuse(f"the {n_u:,} largest samples take only {len(excess)} distinct values, too few for a "
                      "tail fit", u=u, n_u=n_u)
    rate = n_u / n
    xi, sigma, best = _fit(excess, tw)
    if xi < MIN_SHAPE:
        return refuse(f"the fitted shape {xi:.2f} is below {MIN_SHAPE}: the tail is bounded (an upper end "
                      f"near {u - sigma / xi:.4g}) and the fit is not regular there", xi=xi, sigma=sigma, u=u, n_u=n_u)
    if xi >= MAX_SHAPE:
        moment = "no finite mean" if xi >= 1 else "no finite variance"
        return refuse(f"the fitted shape {xi:.2f} is {MAX_SHAPE} or more: a tail with {moment}, which the "
                      "samples cannot extrapolate", xi=xi, sigma=sigma, u=u, n_u=n_u)
    fit_p = _ks_p(excess, tw, xi, sigma)
    if fit_p < FIT_ALPHA:
        return refuse(f"a generalized Pareto distribution does not fit the {n_u} largest samples (KS p = "
                      f"{fit_p:.2g})", xi=xi, sigma=sigma, u=u, n_u=n_u, fit_p=fit_p)
    level = _level(u, xi, sigma, rate, exceedance)
    try:
        lo, hi = _interval(excess, tw, u, rate, exceedance, level, best)
    except (ValueError, ArithmeticError):
        lo = hi = None
    if lo is None:
        return refuse("the likelihood of the fit gives no interval for the estimate", xi=xi, sigma=sigma, u=u,
                      n_u=n_u, fit_p=fit_p)
    if hi is None or hi > MAX_CI_RATIO * lo:
        reach = "has no upper end" if hi is None else f"reaches {hi / lo:,.0f} times its lower end"
        return refuse(f"the 95 % interval of the estimate {reach}, more than {MAX_CI_RATIO} times: the "
                      f"{n_u:,} largest samples do not pin the tail down", xi=xi, sigma=sigma, u=u, n_u=n_u,
                      fit_p=fit_p)
    return TailEstimate(exceedance, level, lo, hi, xi, sigma, u, n, n_u, fit_p)


def _interval(excess, w, u, rate, p, level, best) -> tuple[float | None, float | None]:
    """The 95 % profile-likelihood interval of the p-level (None for an end it cannot find)."""
    def gap(x):
        return 2 * (best - _profile(excess, w, x, u, rate, p)) - CHI2_95

    span = level - u
    if span <= 0 or not gap(level) < 0:
        return None, None          # the profile does not peak at the estimate: no interval to read
    ends = []
    for factors in ((0.9, 0.75, 0.5, 0.25, 0.1, 0.01), (1.2, 1.5, 2, 4, 10, 100, 1000)):
        a, end = level, None
        for factor in factors:
            b = u + span * factor
            if gap(b) > 0:
                end = root_between(gap, min(a, b), max(a, b), xtol=span * 1e-4)
                break
            a = b
        ends.append(end)
    return ends[0], ends[1]


def _ks_p(excess, w, xi, sigma) -> float:
    """Kolmogorov-Smirnov p-value of the excesses against the fitted GPD (weighted samples are
    expanded by their counts, capped to keep the test cheap).

    The p-value is Kolmogorov's limiting distribution at Stephens' corrected statistic
    (sqrt(n) + 0.12 + 0.11 / sqrt(n)) * D: within 0.015 of the exact distribution for the 50 or more
    samples a fit has, 0.004 from 1000 on (the tests hold it to scipy.stats.kstest)."""
    counts = np.minimum(np.round(w).astype(int), 1000)
    sample = np.sort(np.repeat(excess, counts))
    n = len(sample)
    cdf = _gpd_cdf(sample, xi, sigma)
    d = max(float(np.max(np.arange(1, n + 1) / n - cdf)), float(np.max(cdf - np.arange(n) / n)))
    return kolmogorov_sf((math.sqrt(n) + 0.12 + 0.11 / math.sqrt(n)) * d)


def kolmogorov_sf(y: float) -> float:
    """P(K > y) for Kolmogorov's distribution K, the limit of sqrt(n) times the KS statistic. Of its
    two series, each takes 12 terms where it converges fast: the alternating one above y = 1 (its
    13th term is below e^-338), Jacobi's theta form of the distribution function below (below e^-246).
    Here rather than scipy.special's, whose import cost a report 35 ms."""
    if y <= 0:
        return 1.0
    k = np.arange(1, 13)
    if y >= 1:
        return float(np.clip(2 * np.sum((-1.0) ** (k - 1) * np.exp(-2 * k * k * y * y)), 0.0, 1.0))
    cdf = math.sqrt(2 * math.pi) / y * np.sum(np.exp(-((2 * k - 1) ** 2) * math.pi ** 2 / (8 * y * y)))
    return float(np.clip(1 - cdf, 0.0, 1.0))


def _gpd_cdf(x: np.ndarray, xi: float, sigma: float) -> np.ndarray:
    """P(X <= x) of the generalized Pareto distribution with shape xi and scale sigma (x >= 0)."""
    if xi == 0:
        return -np.expm1(-x / sigma)
    z = 1 + xi * x / sigma
    with np.errstate(divide="ignore", invalid="ignore"):
        f = -np.expm1(-np.log1p(xi * x / sigma) / xi)
    return np.where(z > 0, f, 1.0)          # beyond a bounded tail's end (xi < 0)
