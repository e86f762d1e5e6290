"""Summaries of a figure across repetitions: n, min, mean, median, stddev, percentiles, max."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from rtvbench.analysis.dataset import RunData

#: percentiles of the repetition values reported with every summary (linear interpolation:
#: with a handful of repetitions there is no better-defined choice and numpy's default is the common one)
SUMMARY_PERCENTILES = (25.0, 75.0, 95.0)


@dataclass
class Summary:
    n: int
    min: float | None
    mean: float | None
    median: float | None
    stddev: float | None          # sample standard deviation (ddof = 1); None with fewer than 2 values
    max: float | None
    percentiles: dict[str, float] = field(default_factory=dict)   # "p25" -> value
    values: list[float] = field(default_factory=list)             # per repetition, in repetition order

    @property
    def cv(self) -> float | None:
        """Coefficient of variation (stddev / |mean|), the scale-free measure of run-to-run noise."""
        if self.stddev is None or not self.mean:
            return None
        return self.stddev / abs(self.mean)


def summarize(values: list[float]) -> Summary:
    vals = [float(v) for v in values if v is not None and not math.isnan(v)]
    if not vals:
        return Summary(0, None, None, None, None, None, {}, [])
    a = np.asarray(vals)
    return Summary(
        n=len(vals),
        min=float(a.min()),
        mean=float(a.mean()),
        median=float(np.median(a)),
        stddev=float(a.std(ddof=1)) if len(vals) > 1 else None,
        max=float(a.max()),
        percentiles={f"p{p:g}": float(np.percentile(a, p)) for p in SUMMARY_PERCENTILES},
        values=vals,
    )


@dataclass
class CellSummary:
    environment: str
    load: str
    benchmark: str
    figure: str
    summary: Summary


def summaries(data: RunData) -> list[CellSummary]:
    """One summary per (environment, load, benchmark, figure) over the completed repetitions."""
    out = []
    for bench in data.benchmarks:
        figures = data.figure_names(bench)
        for env, load in data.cells(bench):
            for figure in figures:
                s = summarize(data.values(env, load, bench, figure))
                if s.n:
                    out.append(CellSummary(env, load, bench, figure, s))
    return out
