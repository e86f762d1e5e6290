"""CSV export in long ("tidy") form: one row per (measurement, figure).

A measurement without figures (failed, or of a kind rtvbench cannot analyse)
still gets one row with empty figure and value, so that the export accounts for
every measurement of the run.

What the measurement ran under follows its own figures, in the same columns:
`load.<load>.<figure>` for what each probe load achieved (`achieved_percent`, per CPU as
`load.<load>.cpu<N>.achieved_percent`, `achieved_bps`, `achieved_ops_per_s` ...) and
`cpu_usage.<all|cpuN>.<state>_percent` from /proc/stat (`busy_percent`, `steal_percent` ...),
outside the baseline environment `cpu_usage.all.busy_vs_<baseline>_points` (all CPUs' busy % less the
baseline environment's mean under the same load, in percentage points), then what each run analysis
adds of the measurement (`host_usage.guest<N>.<figure>`: what each guest of a qemu environment cost
the host, and its memory as the guest counts it).
Repetitions are counted from 1, as in the report's tables.
"""

from __future__ import annotations

import csv
import io

from rtvbench.analysis.cpu_usage import STATES
from rtvbench.analysis.evaluation import Evaluation
from rtvbench.analysis.metrics import figure_unit
from rtvbench.report.run_section import with_parts
from rtvbench.results import Measurement

COLUMNS = ["run_id", "campaign", "environment", "load", "benchmark", "kind", "repetition", "status",
           "figure", "value", "unit"]


def render_csv(ev: Evaluation) -> str:
    run = ev.data.run
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for m in sorted(run.measurements, key=lambda m: (m.benchmark, m.environment, m.load, m.repetition, m.id)):
        base = [run.id, run.campaign_name, m.environment, m.load, m.benchmark, m.kind, m.repetition + 1, m.status]
        figures = ev.data.figures(m)
        if not figures:
            w.writerow(base + ["", "", ""])
        for name in sorted(figures):
            w.writerow(base + [name, _value(figures[name]), figure_unit(m.kind, name)])
        for name, value, unit in _context_rows(ev, m):
            w.writerow(base + [name, _value(value), unit])
    return buf.getvalue()


def _value(v: float) -> int | str:
    return repr(float(v)) if not float(v).is_integer() else int(v)


def _context_rows(ev: Evaluation, m: Measurement) -> list[tuple[str, float, str]]:
    """The achieved figures of the measurement's probe loads and its CPU usage."""
    out = []
    around = ev.around(m)
    for a in around.loads_achieved:
        p = f"load.{a.load}."
        if a.achieved_percent is not None:
            out.append((p + "achieved_percent", a.achieved_percent, "percent"))
        for label, v in a.per_cpu.items():
            if v is not None:
                out.append((p + label.replace(" ", "").lower() + ".achieved_percent", v, "percent"))
        if a.bps is not None:
            out.append((p + "achieved_bps", a.bps, "bps"))
        if a.ops_per_s is not None:
            out.append((p + "achieved_ops_per_s", a.ops_per_s, "per_s"))
        for key, v in a.extra.items():
            if isinstance(v, (int, float)):
                unit = "bytes" if "bytes" in key else "ns" if key.endswith("_ns") else "count"
                out.append((p + key, float(v), unit))
    for u in around.cpu_usage:
        p = "cpu_usage." + ("all" if u.cpu == "all" else f"cpu{u.cpu}") + "."
        out.append((p + "busy_percent", u.busy, "percent"))
        out += [(p + f"{s}_percent", u.percent[s], "percent") for s in STATES]
    if around.busy_vs_baseline is not None:
        d = around.busy_vs_baseline
        out.append((f"cpu_usage.all.busy_vs_{d.baseline}_points", d.points, "percentage points"))
    for section, part in with_parts(ev):
        out += section.csv_rows(ev, part, m)
    return out
