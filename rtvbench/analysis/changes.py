"""When a figure changed: the steps in a figure's history, found by Apache Otava's change-point detection.

A history (analysis.history) compares each run with the one before it, which flags every noisy pair
and misses a drift spread over several runs. Otava (the E-Divisive means method of Hunter, split in
windows and merged while Student's t-test keeps each step significant) looks at the whole series of a
cell's per-run medians at once and names the runs where its level moved. Each step carries the medians
of the runs between it and its neighbouring steps, the last run before and the first after it (the two
to compare), and the t-test's p-value.

Otava ships in the rtvbench[changes] extra: its distribution also brings clients of services rtvbench
never talks to, so it is imported only when changes are asked for.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import datetime

from rtvbench.analysis.history import History
from rtvbench.errors import InputError

# A step is kept when the two sides differ at this p-value or below: with a few dozen runs per cell
# and a figure per cell, 0.001 keeps the false alarms of a whole store in single figures.
MAX_P_VALUE = 0.001
# Otava looks for steps in windows of this many runs, halves overlapping; a nightly run per board makes
# it about seven weeks.
WINDOW = 50


@dataclass(frozen=True)
class Change:
    metric: str                  # as asked, BENCHMARK.FIGURE
    environment: str
    load: str
    index: int                   # the first point after the step, in the cell's series (oldest first)
    run_before: int              # the last run before the step
    run_after: int               # the first run after it
    started_at: datetime | None  # when run_after started
    median_before: float         # of the runs' medians between the previous step (or the start) and this one
    median_after: float          # of the runs' medians between this step and the next (or the end)
    p_value: float               # Otava's t-test of the two sides

    @property
    def change_percent(self) -> float | None:
        if self.median_before == 0:
            return None
        return (self.median_after - self.median_before) / abs(self.median_before) * 100.0

    def compare_command(self) -> str:
        return f"rtvbench compare {self.run_before} {self.run_after}"


def step_indices(values: list[float], max_p_value: float = MAX_P_VALUE) -> list[tuple[int, float]]:
    """(index of the first value after a step, p-value) of every step Otava finds in `values`."""
    if len(values) < 3:
        return []
    try:
        from otava.analysis import compute_change_points
    except ImportError:
        raise InputError("finding change points needs Apache Otava: pip install 'rtvbench[changes]' "
                         "(or pip install apache-otava).") from None
    points, _ = compute_change_points([float(v) for v in values], window_len=WINDOW, max_pvalue=max_p_value)
    return [(int(p.index), float(p.stats.pvalue)) for p in points]


def changes(h: History, max_p_value: float = MAX_P_VALUE) -> list[Change]:
    """Every step in every cell of the history, cell by cell, oldest first."""
    found = []
    for s in h.series:
        medians = [p.median for p in s.points]
        steps = step_indices(medians, max_p_value)
        bounds = [0] + [i for i, _ in steps] + [len(medians)]
        for n, (i, p_value) in enumerate(steps):
            before, after = s.points[i - 1], s.points[i]
            found.append(Change(h.metric, s.environment, s.load, i, before.run_id, after.run_id, after.started_at,
                                statistics.median(medians[bounds[n]:i]), statistics.median(medians[i:bounds[n + 2]]),
                                p_value))
    return found
