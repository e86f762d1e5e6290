"""What the published site shows, from the list of runs and each run's history values
(publish.values): the runs with their tags and notes, and every figure's history per environment and
load (publish.site finds the change points of those whose history changed).

One pass over the runs builds the series of every figure at once (analysis.history follows one figure
and tests each run against the previous one, which a site over a thousand runs cannot afford)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from rtvbench.analysis.kind import get_kind
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
    stamp: str = ""          # of its measurements (store.reader.measurement_stamps)

    def key(self) -> str:
        """What a run's report depends on in the store: a run that did not change keeps its report."""
        return repr((self.id, self.status, str(self.finished_at), self.measurements, self.ok,
                     sorted(self.tags.items()), self.note, self.stamp))


@dataclass
class SiteData:
    runs: list[RunEntry]                       # oldest first
    figures: list[History]                     # by metric name
    environments: dict[str, set[str]]          # environment -> the loads it was measured under
    campaigns: dict[str, list[int]]            # campaign -> its run ids


def collect(runs: list[RunEntry], values: dict[int, list]) -> SiteData:
    """The site's data from the listed runs and the history values (publish.values.run_values) of
    those of them that could be read."""
    histories: dict[str, History] = {}
    cells: dict[tuple[str, str, str], Series] = {}
    environments: dict[str, set[str]] = {}
    campaigns: dict[str, list[int]] = {}
    for entry in runs:
        campaigns.setdefault(entry.campaign, []).append(entry.id)
        for bench, kind_name, env, load, fig, figure_values in values.get(entry.id, ()):
            environments.setdefault(env, set()).add(load)
            metric = f"{bench}.{fig}"
            h = histories.get(metric)
            if h is None:
                kind = get_kind(kind_name)
                if kind is None:
                    continue
                h = histories[metric] = History(metric, fig, kind, [])
            s = cells.get((metric, env, load))
            if s is None:
                s = cells[(metric, env, load)] = Series(env, load)
                h.series.append(s)
            s.points.append(Point(entry.id, entry.started_at, entry.tags, figure_values,
                                  statistics.median(figure_values)))
    return SiteData(runs, [h for _, h in sorted(histories.items())], environments, campaigns)
