"""The verdict of a soak (`rtvbench soak`): how long it ran, which targets were lost and brought back,
whether the worst latency drifts upwards over the hours, whether memory grows.

Trends are ordinary least-squares slopes against the time since the soak started, with the two-sided
p-value of Student's t on n - 2 degrees of freedom: a slope is called a rise only when it is positive
and p < ALPHA. Latency: each measurement's `max_us` (the worst wake-up of that repetition), per cell.
Memory: the guest's (or machine's) used memory (MemTotal - MemAvailable) and its QEMU processes' RSS
from the health checks; a target that was lost and brought back starts a new series, so growth is
judged on the checks since its last recovery.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from rtvbench.analysis.dataset import COMPLETE, RunData
from rtvbench.analysis.run_analysis import RUN_ANALYSES, RunAnalysis
from rtvbench.units import counted

ALPHA = 0.05
#: below this many points a slope says nothing
MIN_POINTS = 3


@dataclass
class Trend:
    n: int
    first: float
    last: float
    slope_per_h: float | None      # None: fewer than MIN_POINTS points, or no spread in time
    p_value: float | None

    @property
    def rising(self) -> bool:
        return self.slope_per_h is not None and self.slope_per_h > 0 and (self.p_value or 1) < ALPHA


def trend(points: list[tuple[float, float]]) -> Trend | None:
    """Least-squares slope of (hours, value) points, its p-value; None without points."""
    if not points:
        return None
    points = sorted(points)
    n = len(points)
    first, last = points[0][1], points[-1][1]
    if n < MIN_POINTS:
        return Trend(n, first, last, None, None)
    mt = sum(t for t, _ in points) / n
    mv = sum(v for _, v in points) / n
    sxx = sum((t - mt) ** 2 for t, _ in points)
    if sxx == 0:
        return Trend(n, first, last, None, None)
    slope = sum((t - mt) * (v - mv) for t, v in points) / sxx
    resid = sum((v - mv - slope * (t - mt)) ** 2 for t, v in points)
    se = math.sqrt(resid / (n - 2) / sxx)
    if se == 0:
        return Trend(n, first, last, slope, 1.0 if slope == 0 else 0.0)
    # Imported here: every report loads this analysis, and only a soak's trends need Student's t.
    from scipy.special import stdtr
    p = float(2 * stdtr(n - 2, -abs(slope) / se))
    return Trend(n, first, last, slope, p)


@dataclass
class EnvironmentHealth:
    environment: str
    checks: int
    failed_checks: int
    lost: int
    recovered: int
    first_failure: str | None = None
    memory: Trend | None = None              # used memory, MiB, since the last recovery
    # Whether a rise of `memory` is a finding: not for the machine rtvbench runs on (its target's
    # description says `rtvbench_host`), whose memory rtvbench and everything else running here share
    memory_judged: bool = True
    qemu_rss: Trend | None = None            # QEMU's RSS summed over the guests, MiB, since the last recovery


@dataclass
class LatencyTrend:
    environment: str
    load: str
    benchmark: str
    trend: Trend
    per_bin: list[tuple[float, float]]       # (bin start, hours; worst max_us in it)


@dataclass
class SoakVerdict:
    hours: float
    bin_hours: float                          # width of the per-bin maxima
    measurements: int
    failed_measurements: int
    environments: list[EnvironmentHealth]
    latency: list[LatencyTrend]
    findings: list[str] = field(default_factory=list)

    @property
    def stable(self) -> bool:
        return not self.findings


def _hours(when, start) -> float:
    return (when - start).total_seconds() / 3600


def soak_verdict(data: RunData) -> SoakVerdict | None:
    """None for a run that is not a soak (no health checks)."""
    run = data.run
    if not run.health:
        return None
    start = run.started_at or run.health[0].when
    end = run.finished_at or run.health[-1].when
    hours = max(0.0, _hours(end, start)) if start and end else 0.0
    envs: dict[str, EnvironmentHealth] = {}
    series: dict[str, tuple[list, list]] = {}
    for c in run.health:
        e = envs.setdefault(c.environment, EnvironmentHealth(c.environment, 0, 0, 0, 0))
        mem, rss = series.setdefault(c.environment, ([], []))
        if c.event == "lost":
            e.lost += 1
        elif c.event == "recovered":
            e.recovered += 1
            mem.clear()
            rss.clear()             # a new guest: growth is judged on this one alone
        else:
            e.checks += 1
            if not c.probe_ok:
                e.failed_checks += 1
                e.first_failure = e.first_failure or c.error
            t = _hours(c.when, start) if c.when and start else 0.0
            if c.mem_used_kib is not None:
                mem.append((t, c.mem_used_kib / 1024))
            guests = [g.rss_kib for g in c.qemu if g.rss_kib is not None]
            if guests:
                rss.append((t, sum(guests) / 1024))
    for env, (mem, rss) in series.items():
        envs[env].memory, envs[env].qemu_rss = trend(mem), trend(rss)
        described = run.targets.get(env) or {}
        # Runs stored before a target said whether it is rtvbench's own machine: only local ones were.
        envs[env].memory_judged = not described.get("rtvbench_host", described.get("target") == "local")

    bin_hours = 1.0 if hours >= 2 else max(hours / 6, 1 / 3600)
    latency = []
    for bench in data.benchmarks:
        for env, load in data.cells(bench):
            points = [(_hours(m.started_at, start), data.figures(m)["max_us"])
                      for m in data.measurements(env, load, bench, COMPLETE)
                      if m.started_at and start and "max_us" in data.figures(m)]
            t = trend(points)
            if t is None:
                continue
            bins: dict[int, float] = {}
            for h, v in points:
                k = int(h // bin_hours)
                bins[k] = max(bins.get(k, v), v)
            latency.append(LatencyTrend(env, load, bench, t, [(k * bin_hours, v) for k, v in sorted(bins.items())]))
    ms = data.measurements()
    v = SoakVerdict(hours, bin_hours, len(ms), sum(m.status != "ok" for m in ms), list(envs.values()), latency)
    for e in v.environments:
        if e.lost:
            v.findings.append(f"`{e.environment}` was lost {e.lost} time{'s' if e.lost != 1 else ''} and brought "
                              f"back {e.recovered} time{'s' if e.recovered != 1 else ''}")
        if e.failed_checks:
            v.findings.append(f"{e.failed_checks} of {counted(e.checks, 'health check')} of `{e.environment}` failed "
                              f"(first: {e.first_failure})")
        for what, tr in (("used memory", e.memory if e.memory_judged else None), ("QEMU's memory (RSS)", e.qemu_rss)):
            if tr is not None and tr.rising:
                v.findings.append(f"the {what} of `{e.environment}` grows by {tr.slope_per_h:.1f} MiB/h "
                                  f"(p = {tr.p_value:.2g}; {tr.first:.0f} -> {tr.last:.0f} MiB)")
    for lt in v.latency:
        if lt.trend.rising:
            v.findings.append(f"the worst wake-up of `{lt.benchmark}` in `{lt.environment}` under `{lt.load}` rises "
                              f"by {lt.trend.slope_per_h:.1f} us/h (p = {lt.trend.p_value:.2g})")
    if v.failed_measurements:
        v.findings.append(f"{v.failed_measurements} of {counted(v.measurements, 'measurement')} did not complete")
    return v


SOAK: RunAnalysis[SoakVerdict] = RUN_ANALYSES.register("soak")(
    RunAnalysis("soak", lambda data, around: soak_verdict(data)))
