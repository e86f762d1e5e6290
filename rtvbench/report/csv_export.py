"""CSV export in long ("tidy") form: one row per (measurement, figure).

A measurement without figures (failed, or of a kind rtvbench cannot analyse)
still gets one row with empty figure and value, so that the export accounts for
every measurement of the run.
"""

from __future__ import annotations

import csv
import io

from rtvbench.analysis.evaluation import Evaluation
from rtvbench.analysis.metrics import figure_unit

COLUMNS = ["run_id", "campaign", "environment", "load", "benchmark", "kind", "repetition", "status",
           "figure", "value", "unit"]


def render_csv(ev: Evaluation) -> str:
    run = ev.data.run
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for m in sorted(run.measurements, key=lambda m: (m.benchmark, m.environment, m.load, m.repetition, m.id)):
        base = [run.id, run.campaign_name, m.environment, m.load, m.benchmark, m.kind, m.repetition, m.status]
        figures = ev.data.figures(m)
        if not figures:
            w.writerow(base + ["", "", ""])
        for name in sorted(figures):
            w.writerow(base + [name, repr(float(figures[name])) if not float(figures[name]).is_integer()
                               else int(figures[name]), figure_unit(m.kind, name)])
    return buf.getvalue()
