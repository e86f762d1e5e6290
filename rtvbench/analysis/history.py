"""One figure across runs: how a metric moved over months of builds, BSP releases, boards.

Each run that measured the metric's benchmark contributes, per cell (environment x load), its
repetitions' values of the figure (completed repetitions only, as in a run's own summaries). Each point
is compared with the cell's previous point by the machinery a run uses between its environments
(rtvbench.analysis.compare), so a step is called significant only when the repetitions show it.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from rtvbench.analysis.compare import RatioTest, ratio_test
from rtvbench.analysis.dataset import RunData
from rtvbench.analysis.metrics import resolve_metric
from rtvbench.errors import InputError


@dataclass
class Point:
    run_id: int
    started_at: object
    tags: dict[str, str]
    values: list[float]
    median: float
    against_previous: RatioTest | None = None    # None for a cell's first point


@dataclass
class Series:
    environment: str
    load: str
    points: list[Point] = field(default_factory=list)


@dataclass
class History:
    metric: str
    figure: str
    kind: object                  # the benchmark's analysis kind (units, formatting, direction)
    series: list[Series]


def history(runs: list[RunData], metric: str, environments: list[str] | None = None,
            loads: list[str] | None = None) -> History:
    """The metric's values in every run (oldest first) that has its benchmark, per cell.
    Raises InputError when no run has the figure (naming what was asked)."""
    series: dict[tuple[str, str], Series] = {}
    kind = figure = None
    for data in runs:
        try:
            bench, fig = resolve_metric(metric, data.benchmarks)
        except ValueError:
            raise InputError(f"{metric!r} is not BENCHMARK.FIGURE, e.g. wakeup.p99_us.") from None
        if bench not in data.benchmarks or data.kind(bench) is None or not data.kind(bench).knows(fig):
            continue
        kind, figure = data.kind(bench), fig
        for env, load in data.cells(bench):
            if (environments and env not in environments) or (loads and load not in loads):
                continue
            values = data.values(env, load, bench, fig)
            if not values:
                continue
            s = series.setdefault((env, load), Series(env, load))
            t = ratio_test(s.points[-1].values, values, margin_percent=data.spec.equivalence_percent,
                           lower_is_better=kind.lower_is_better(fig)) if s.points else None
            s.points.append(Point(data.run.id, data.run.started_at, dict(data.run.tags or {}), values,
                                  statistics.median(values), t))
    if not series:
        where = "".join(f" in {what} {', '.join(names)}" for what, names in
                        (("environment", environments), ("load", loads)) if names)
        raise InputError(f"no run in the store has {metric}{where}; `rtvbench show ID` lists a run's "
                         "benchmarks, and a report names their figures.")
    return History(metric, figure, kind, list(series.values()))
