"""Report tables about loads: what each load achieved, and CPU usage from /proc/stat.

"Next to every result": the achieved figures of a cell's load appear in the benchmark's
preconditions, in a kind's per-repetition tables and in these tables; the numbers come from the
evaluation, never computed here.
"""

from __future__ import annotations

from rtvbench.analysis.cpu_usage import STATES, busy_text
from rtvbench.analysis.evaluation import Evaluation
from rtvbench.analysis.load_achieved import describe_all, no_record_words
from rtvbench.report.tables import Row, Table
from rtvbench.results import Measurement


def cell_achieved_text(ev: Evaluation, env: str, load: str, bench: str, quote: bool = True) -> str:
    """What the probe loads of a cell achieved (mean over its completed repetitions), or ""."""
    return describe_all(ev.cell(env, load, bench).loads_achieved, quote=quote)


def measurement_achieved_text(ev: Evaluation, m: Measurement) -> str:
    return describe_all(ev.around(m).loads_achieved)


def measurement_busy_text(ev: Evaluation, m: Measurement) -> str:
    usage = [u for u in ev.around(m).cpu_usage if u.cpu != "all"]
    return ", ".join(f"{u.label}: {u.busy:.0f} %" for u in usage)


def load_kind_words(ev: Evaluation, load: str, env: str) -> str:
    spec = ev.data.load(load)
    env_spec = ev.data.environment(env)
    if spec is None or spec.is_idle:
        return "no load"
    if spec.where == "neighbours" and (env_spec is None or env_spec.guests == 1):
        return "no load: a single guest has no neighbour to run it"
    return no_record_words(spec.kind)


def _points(d) -> str:
    return "–" if d is None else f"{d.points:+.1f} pp ({d.baseline_busy + d.points:.1f} % vs {d.baseline_busy:.1f} %)"


def usage_tables(ev: Evaluation, bench: str) -> list[Table]:
    """The achieved load and busy CPUs per cell, then every CPU state's share per cell and CPU."""
    data = ev.data
    cells = data.cells(bench)
    usage = {cell: ev.cell(*cell, bench).cpu_usage for cell in cells}
    achieved = {cell: cell_achieved_text(ev, *cell, bench) for cell in cells}
    if not any(usage.values()) and not any(achieved.values()):
        return []
    n = {cell: len(data.measurements(*cell, bench, ("ok",))) for cell in cells}
    against = {cell: ev.cell(*cell, bench).busy_vs_baseline for cell in cells}
    base = next((d.baseline for d in against.values() if d), None)
    summary = Table(
        f"{bench}: load achieved and CPU usage during the measurements",
        ["Environment", "Load", "Load achieved", "CPU busy (/proc/stat)"]
        + ([f"Busy against `{base}` (pp)"] if base else []) + ["Repetitions"],
        [Row([env, load, achieved[(env, load)] or load_kind_words(ev, load, env),
              busy_text(usage[(env, load)]) or "not recorded"]
             + (["baseline" if env == base else _points(against[(env, load)])] if base else []) + [str(n[(env, load)])]) for env, load in cells],
        numeric_from=4,
        note="Achieved: what each probe load measured of itself over its run (mean over the completed "
             "repetitions; a cpu load's share is per CPU it runs on). CPU busy: everything but idle and iowait in "
             "the /proc/stat difference between right before and right after the probe ran, in the measured "
             "environment."
             + (f" Busy against `{base}`: all CPUs' mean busy % less that of `{base}` under the same load (B - A), "
                "in percentage points, with the two shares." if base else ""))
    tables = [summary]
    rows = []
    for env, load in cells:
        for u in usage[(env, load)]:
            rows.append(Row([f"{env} / {load}", u.label, f"{u.busy:.1f}"]
                            + [f"{u.percent[s]:.1f}" for s in STATES],
                            "summary" if u.cpu == "all" else ""))
    if rows:
        tables.append(Table(
            f"{bench}: CPU time by state while the probe ran (% of each CPU, /proc/stat)",
            ["Environment / load", "CPU", "busy", *STATES], rows, numeric_from=2,
            note="Mean over the completed repetitions of each state's share of the ticks that elapsed between the "
                 "two /proc/stat samples. steal: time the hypervisor ran something else on "
                 "this vCPU. The kernel charges each tick (1-10 ms) to whatever runs at that instant: a "
                 "one-second measurement resolves about 1 %, and a periodic task locked to the tick (a 1 kHz loop) "
                 "can show as almost 0 % or 100 % busy. The loads' achieved figures come from their own CPU-time "
                 "clocks and have no such bias."))
    return tables
