"""The report's part of a disruption: per benchmark, each event of a disrupt load and the victim's
figures around it against the calm windows; each measurement's events in the JSON."""

from __future__ import annotations

from typing import Any

from rtvbench.analysis.evaluation import Evaluation
from rtvbench.report.run_section import RUN_SECTIONS, RunSection
from rtvbench.report.tables import Row, Table
from rtvbench.results import Measurement
from rtvbench.run_analyses.disruption.analysis import DISRUPTION, Disruption
from rtvbench.units import counted


def disruption_tables(ev: Evaluation, part: dict[int, Disruption], bench: str) -> list[Table]:
    """Each event of a disrupt load and what the victim measured around it, against the rest."""
    rows = []
    for m in ev.data.measurements(benchmark=bench):
        d = part.get(m.id)
        if d is None:
            continue
        where = [m.environment, m.load, str(m.repetition + 1)]
        for e in d.events:
            rows.append(Row(where + [f"{e.index + 1} ({e.load})", f"{e.start_s:.2f} .. {e.end_s:.2f}", e.action,
                                     "–" if e.boot_s is None else f"{e.boot_s:.2f}",
                                     "–" if e.max_us is None else f"{e.max_us:.1f}", str(e.missed)]))
        rows.append(Row(where + [f"no event ({counted(len(d.events), 'event')})", counted(d.calm_windows, 'window'), "",
                                 "", "–" if d.calm_max_us is None else f"{d.calm_max_us:.1f} (median)",
                                 str(d.calm_missed)], "summary"))
    if not rows:
        return []
    return [Table(
        f"{bench}: the victim while a neighbour guest was disrupted",
        ["Environment", "Load", "Rep", "Event", "When (s)", "Action", "Guest boot (s)", "Victim max (us)",
         "Missed"], rows, numeric_from=6,
        note="Each event of a disrupt load (a guest rebooted, or killed and booted again) with the seconds "
             "since the load started, and the victim's worst window maximum and missed periods in the windows "
             "that overlap it (widened by 0.25 s on each side: the event and the victim's windows are timed "
             "from origins tens of ms apart). The summary row: the median window maximum and the periods "
             "missed in the windows that overlap no event.")]


def measurement_json(ev: Evaluation, part: dict[int, Disruption] | None, m: Measurement) -> dict[str, Any]:
    """The events of a disrupt load during the measurement and the victim around each; None without."""
    d = (part or {}).get(m.id)
    if d is None:
        return {"disruption": None}
    return {"disruption": {
        "events": [{"load": e.load, "index": e.index, "start_s": e.start_s, "end_s": e.end_s, "action": e.action,
                    "boot_s": e.boot_s, "victim_max_us": e.max_us, "victim_missed": e.missed, "windows": e.windows}
                   for e in d.events],
        "calm_max_us": d.calm_max_us, "calm_missed": d.calm_missed, "calm_windows": d.calm_windows}}


RUN_SECTIONS.register("disruption")(RunSection(DISRUPTION, bench_tables=disruption_tables,
                                               measurement_json=measurement_json))
