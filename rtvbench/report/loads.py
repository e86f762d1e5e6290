"""Report tables about loads: what each load achieved, CPU usage from /proc/stat, the ranking
of aggressors and the 003-style response-time matrix.

"Next to every result": the achieved figures of a cell's load appear in the benchmark's
preconditions, in its per-repetition table (latency) and in these tables; the numbers come
from rtvbench.analysis (load_achieved, cpu_usage, interference), never recomputed here.
"""

from __future__ import annotations

from rtvbench.analysis.cpu_usage import STATES, busy_text, cell_usage, measurement_usage
from rtvbench.analysis.evaluation import Evaluation
from rtvbench.analysis.interference import Ranking
from rtvbench.analysis.kinds import get_kind
from rtvbench.analysis.load_achieved import cell_achieved, describe_all, load_order, measurement_achieved
from rtvbench.analysis.units import format_time
from rtvbench.report.model import Row, Table
from rtvbench.results import Measurement


def cell_achieved_text(ev: Evaluation, env: str, load: str, bench: str) -> str:
    """What the probe loads of a cell achieved (mean over its completed repetitions), or ""."""
    return describe_all(cell_achieved(ev.data, env, load, bench))


def measurement_achieved_text(ev: Evaluation, m: Measurement) -> str:
    return describe_all(measurement_achieved(m, load_order(ev.data, m.load)))


def measurement_busy_text(m: Measurement) -> str:
    usage = [u for u in measurement_usage(m) if u.cpu != "all"]
    return ", ".join(f"{u.label}: {u.busy:.0f} %" for u in usage)


def _load_kind_words(ev: Evaluation, load: str, env: str) -> str:
    t = ev.data.load_table(load)
    if not t:
        return "no load"
    if t.get("where") == "neighbours" and ev.data.environment_table(env).get("count", 1) == 1:
        return "no load: a single guest has no neighbour to run it"
    if "command" in t:
        return "external command: no figures of its own, see the CPU usage"
    return "no record of what it achieved"


def usage_tables(ev: Evaluation, bench: str) -> list[Table]:
    """The achieved load and busy CPUs per cell, then every CPU state's share per cell and CPU."""
    data = ev.data
    cells = data.cells(bench)
    usage = {cell: cell_usage(data, *cell, bench) for cell in cells}
    achieved = {cell: cell_achieved_text(ev, *cell, bench) for cell in cells}
    if not any(usage.values()) and not any(achieved.values()):
        return []
    n = {cell: len(data.measurements(*cell, bench, ("ok",))) for cell in cells}
    summary = Table(
        f"{bench}: load achieved and CPU usage during the measurements",
        ["Environment", "Load", "Load achieved", "CPU busy (/proc/stat)", "Repetitions"],
        [Row([env, load, achieved[(env, load)] or _load_kind_words(ev, load, env),
              busy_text(usage[(env, load)]) or "not recorded", str(n[(env, load)])]) for env, load in cells],
        numeric_from=4,
        note="Achieved: what each probe load measured of itself over its run (mean over the completed "
             "repetitions; a cpu load's share is per CPU it runs on). CPU busy: everything but idle and iowait in "
             "the /proc/stat difference between right before and right after the probe ran, in the measured "
             "environment.")
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
                 "two /proc/stat samples (reference 000, 5.1). steal: time the hypervisor ran something else on "
                 "this vCPU. The kernel charges each tick (1-10 ms) to whatever runs at that instant: a "
                 "one-second measurement resolves about 1 %, and a periodic task locked to the tick (a 1 kHz loop) "
                 "can show as almost 0 % or 100 % busy. The loads' achieved figures come from their own CPU-time "
                 "clocks and have no such bias."))
    return tables


def ranking_table(ev: Evaluation, rk: Ranking) -> Table:
    kind = get_kind("latency")
    what = kind.label(rk.figure)
    misses = "deadline misses" if rk.misses_figure == "deadline_misses" else "missed periods"
    header = ["Rank", "Load", f"Victim {what} (median, us)", "Ratio to baseline", "95 % CI", "p (Mann-Whitney)",
              "n", "Verdict", f"{misses.capitalize()} (total)", "Per repetition", "Load achieved"]
    rows = []
    for i, r in enumerate(rk.rows, start=1):
        t = r.test
        achieved = cell_achieved_text(ev, rk.environment, r.load, rk.benchmark)
        if r.is_baseline:
            cells = [str(i), f"{r.load} (baseline)", format_time(r.median, "us"), "1 (baseline)", "–", "–",
                     str(len(r.misses_per_repetition)), "baseline"]
            css = "summary"
        else:
            cells = [str(i), r.load, format_time(r.median, "us"),
                     f"{t.ratio:.3g}" if t and t.ratio is not None else "n/a",
                     f"{t.ci_low:.3g} .. {t.ci_high:.3g}" if t and t.ci_low is not None else "–",
                     f"{t.p_value:.3g}" if t and t.p_value is not None else "–",
                     f"{t.n_baseline} vs {t.n_candidate}" if t else "–", t.verdict if t else "–"]
            css = t.verdict.replace(" ", "-") if t else ""
        cells += [f"{r.misses:,}", ", ".join(str(x) for x in r.misses_per_repetition) or "–",
                  achieved or _load_kind_words(ev, r.load, rk.environment)]
        rows.append(Row(cells, css))
    return Table(f"{rk.benchmark} in `{rk.environment}`: aggressors ranked by the victim's degradation (worst first)",
                 header, rows, numeric_from=2, numeric_to=len(header) - 1,
                 note=f"Ratio = median over repetitions of the victim's {what} under the load / the same under "
                      f"`{rk.baseline_load}`; 95 % CI by bootstrap, significant when p < 0.05 and the CI excludes 1 "
                      f"(the comparison machinery of the load comparisons). Ranked by the ratio, then by {misses}; "
                      "a load ranked below the baseline did no measurable harm (reference 000, 5.16-5.18).")


def matrix_table(ev: Evaluation) -> Table | None:
    rows_in = ev.matrix
    cells = {(r.environment, r.benchmark, r.load) for r in rows_in}
    if len(cells) < 2 or len({r.load for r in rows_in}) < 2:
        return None        # one cell is not a matrix; the benchmark's own tables say it all
    rows = []
    for r in rows_in:
        usage = cell_usage(ev.data, r.environment, r.load, r.benchmark)
        total = next((u for u in usage if u.cpu == "all"), None)
        rows.append(Row([r.environment, r.benchmark,
                         format_time(r.interval_ns, "ns") if r.interval_ns else "–",
                         format_time(r.work_ns, "ns") if r.work_ns else "–", r.load,
                         (cell_achieved_text(ev, r.environment, r.load, r.benchmark)
                          or _load_kind_words(ev, r.load, r.environment)),
                         f"{total.busy:.0f} %" if total else "–",
                         "response" if r.response else "wake-up",
                         format_time(r.avg_ns, "ns"), format_time(r.max_ns, "ns"), format_time(r.stddev_ns, "ns"),
                         f"{r.misses:,}", f"{r.samples:,}"]))
    return Table("Response-time matrix: period x load (reference 003)",
                 ["Environment", "Benchmark", "Interval (us)", "Work (us)", "Load", "Load achieved", "CPU busy",
                  "Measured", "avg (us)", "max (us)", "stddev (us)", "Deadline misses", "Samples"],
                 rows, numeric_from=8,
                 note="Over all samples of the completed repetitions of each cell: avg and standard deviation pooled "
                      "exactly from each repetition's count, mean and deviation; max the largest of any repetition. "
                      "Measured: response time (work completion - deadline) when the benchmark has a work budget, "
                      "else wake-up latency. Deadline misses: activations whose response time exceeded the "
                      "interval with a work budget; without one, periods missed by a wake-up later than a whole "
                      "interval.")
