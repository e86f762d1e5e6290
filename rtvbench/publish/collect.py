"""What the published site shows, read from a store in one pass: the runs with their tags and notes,
and every figure's history per environment and load with its change points.

One pass over the runs builds the series of every figure at once (analysis.history follows one figure
and tests each run against the previous one, which a site over a thousand runs cannot afford)."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from rtvbench.analysis.changes import Change, changes
from rtvbench.analysis.dataset import COMPLETE, RunData
from rtvbench.analysis.history import History, Point, Series


@dataclass
class RunEntry:
    id: int
    campaign: str
    status: str
    started_at: object
    finished_at: object
    tags: dict[str, str]
    note: str | None
    measurements: int
    ok: int

    def key(self) -> str:
        """What a run's report depends on in the store: a run that did not change keeps its report."""
        return repr((self.id, self.status, str(self.finished_at), self.measurements, self.ok,
                     sorted(self.tags.items()), self.note))


@dataclass
class FigureHistory:
    history: History
    changes: list[Change] = field(default_factory=list)


@dataclass
class SiteData:
    runs: list[RunEntry]                       # oldest first
    figures: list[FigureHistory]               # by metric name
    environments: dict[str, set[str]]          # environment -> the loads it was measured under
    campaigns: dict[str, list[int]]            # campaign -> its run ids

    @property
    def changes(self) -> list[Change]:
        return [c for f in self.figures for c in f.changes]


def collect(runs: list[RunEntry], loaded: dict[int, RunData]) -> SiteData:
    """The site's data from the listed runs and those of them that could be loaded."""
    histories: dict[str, History] = {}
    cells: dict[tuple[str, str, str], Series] = {}
    environments: dict[str, set[str]] = {}
    campaigns: dict[str, list[int]] = {}
    for entry in runs:
        campaigns.setdefault(entry.campaign, []).append(entry.id)
        data = loaded.get(entry.id)
        if data is None:
            continue
        for bench in data.benchmarks:
            kind = data.kind(bench)
            if kind is None:
                continue
            for env, load in data.cells(bench):
                environments.setdefault(env, set()).add(load)
                per_figure: dict[str, list[float]] = {}
                for m in data.measurements(env, load, bench, COMPLETE):
                    for fig, v in data.figures(m).items():
                        if v is not None and math.isfinite(v) and kind.knows(fig):
                            per_figure.setdefault(fig, []).append(float(v))
                # The figures a run compares between its cells: one page each, not one per unit
                # alias and CPU (`rtvbench history` follows those).
                for fig in kind.compared_figures(list(per_figure)):
                    values = per_figure.get(fig)
                    if not values:
                        continue
                    metric = f"{bench}.{fig}"
                    h = histories.setdefault(metric, History(metric, fig, kind, []))
                    s = cells.get((metric, env, load))
                    if s is None:
                        s = cells[(metric, env, load)] = Series(env, load)
                        h.series.append(s)
                    s.points.append(Point(entry.id, entry.started_at, entry.tags, values, statistics.median(values)))
    figures = [FigureHistory(h, changes(h)) for _, h in sorted(histories.items())]
    return SiteData(runs, figures, environments, campaigns)
