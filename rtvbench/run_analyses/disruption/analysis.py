"""What a disruption did to the victim: for each event of a `disrupt` load (a neighbour guest
rebooted or killed and booted again), the victim's worst latency and its missed periods in the
windows that overlap the event, against the windows that overlap none.

The events are timed on the host from the moment the load started, the victim's windows in the
victim from the moment its probe started, right after; the two origins differ by the probe's start-up
(tens of ms), so a window counts as "during" an event when it overlaps the event widened by MARGIN_S on
each side. Windows are the probe's `window` records that have `max_ns` (latency and noise), merged over
CPUs (the worst CPU per window).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from rtvbench.analysis.dataset import RunData
from rtvbench.analysis.run_analysis import RUN_ANALYSES, RunAnalysis
from rtvbench.loads.disrupt import achieved as disrupt
from rtvbench.results import Measurement

#: how much an event is widened on each side to cover the offset between the two clocks' origins
MARGIN_S = 0.25


@dataclass
class EventImpact:
    load: str                   # the load's records' name (`<load>@<guest>` for neighbours)
    index: int
    start_s: float              # since the load started
    end_s: float
    action: str
    boot_s: float | None        # the disrupted guest's boot, QEMU start to its probe's ready
    max_us: float | None        # the victim's worst window maximum during the event (None: no window)
    missed: int                 # periods the victim missed in those windows
    windows: int


@dataclass
class Disruption:
    events: list[EventImpact]
    calm_max_us: float | None   # median of the window maxima that overlap no event
    calm_missed: int            # periods missed in those windows
    calm_windows: int


def _victim_windows(m: Measurement) -> list[tuple[float, float, float, int]]:
    """(start s, end s, worst max us over CPUs, missed over CPUs) per window interval."""
    merged: dict[tuple[int, int], list] = {}
    for w in m.window_records:
        if "max_ns" not in w.values:
            continue
        key = (w.t_start_ns or 0, w.t_end_ns or 0)
        cur = merged.setdefault(key, [0.0, 0])
        cur[0] = max(cur[0], w.values["max_ns"] / 1e3)
        cur[1] += w.missed
    return [(a / 1e9, b / 1e9, mx, missed) for (a, b), (mx, missed) in sorted(merged.items())]


def measurement_disruption(m: Measurement) -> Disruption | None:
    """The events of the measurement's disrupt loads and the victim around them; None without any."""
    events = [(name, e.index, e.t_start_ns / 1e9, e.t_end_ns / 1e9, e.action,
               e.boot_ns / 1e9 if e.boot_ns is not None else None) for name, e in disrupt.events(m)]
    if not events and not disrupt.ran_beside(m):
        return None
    windows = _victim_windows(m)
    impacts, touched = [], set()
    for name, index, start, end, action, boot in sorted(events, key=lambda e: e[2]):
        hit = [i for i, (a, b, _, _) in enumerate(windows) if a < end + MARGIN_S and b > start - MARGIN_S]
        touched.update(hit)
        impacts.append(EventImpact(name, index, start, end, action, boot,
                                   max((windows[i][2] for i in hit), default=None),
                                   sum(windows[i][3] for i in hit), len(hit)))
    calm = [w for i, w in enumerate(windows) if i not in touched]
    return Disruption(impacts, statistics.median(w[2] for w in calm) if calm else None,
                      sum(w[3] for w in calm), len(calm))


def disruptions(data: RunData, around: object = None) -> dict[int, Disruption] | None:
    """measurement id -> its disruption, for the measurements that ran under a disrupt load; None
    when none did."""
    out = {m.id: d for m in data.run.measurements if (d := measurement_disruption(m)) is not None}
    return out or None


DISRUPTION: RunAnalysis[dict[int, Disruption]] = RUN_ANALYSES.register("disruption")(
    RunAnalysis("disruption", disruptions))
