"""The `latency` section: per repetition, per CPU (cyclictest's table), per environment (min / average
/ max over every sample), overhead tables per compared pair, the interference ranking, the
response-time matrix, and a latency plot per CPU (linear latency axis, log count, the max marked).

The numbers come from the kind's decoder and analyses (decode, interference, pooled) and
the comparison machinery; this module only lays them out.
"""

from __future__ import annotations

from typing import Any

from rtvbench.analysis.compare import p_heading, p_text
from rtvbench.analysis.dataset import COMPLETE
from rtvbench.analysis.evaluation import Evaluation
from rtvbench.analysis.kind import Kind, cpu_figure
from rtvbench.units import format_time, format_value, suffix_unit
from rtvbench.kinds.latency import keys
from rtvbench.kinds.latency.decode import LatencyAnalyses
from rtvbench.kinds.latency.keys import LatencyParams
from rtvbench.kinds.latency.interference import MatrixRow, Ranking
from rtvbench.kinds.latency.pooled import latency_by_environment
from rtvbench.kinds.latency.attribution import CAUSE_WORDS, CAUSES
from rtvbench.kinds.latency.spikes import CellSpikes
from rtvbench.kinds.latency.tails import CellTail, time_text
from rtvbench.report import plots, suite
from rtvbench.report.loads import (cell_achieved_text, load_kind_words, measurement_achieved_text,
                                   measurement_busy_text)
from rtvbench.report.section import Parts, Section, register
from rtvbench.report.tables import Excerpt, Plot, Row, Table

#: the figures of the per-CPU table, in cyclictest's order (C, Min, Avg, Max beside count and missed)
CPU_TABLE = ("count", "min_us", "avg_us", "p999_us", "max_us", "missed")


_NONE = LatencyAnalyses([], [], [], [])


def _analysed(ev: Evaluation, bench: str) -> LatencyAnalyses:
    """The benchmark's own analyses (LatencyKind.analyse), empty for a benchmark that has none."""
    a = ev.extras.get(bench)
    return a if isinstance(a, LatencyAnalyses) else _NONE


class LatencySection(Section):
    kind = "latency"

    def parts(self, ev: Evaluation, bench: str, kind: Kind, with_plots: bool, id_prefix: str) -> Parts:
        data = ev.data
        results = [_repetition_table(ev, bench, env, load) for env, load in data.cells(bench)]
        results += [t for t in (_cpu_table(ev, bench), tail_table(_analysed(ev, bench).tails, bench))
                    if t]
        per_env = latency_environment_table(ev, bench)
        figures = kind.compared_figures(data.figure_names(bench))
        comparisons = ([per_env] if per_env else []) + suite.overhead_tables(ev, bench, kind, figures)
        rankings = [ranking_table(ev, rk, kind) for rk in _analysed(ev, bench).rankings]
        figures = _cpu_plots(ev, bench, id_prefix) if with_plots else []
        traced = _analysed(ev, bench).spikes
        results += spike_tables(traced, keys.of(ev.data.benchmark_params(bench)))
        return Parts(results, comparisons, figures, rankings, spike_excerpts(traced))

    def key_columns(self, ev: Evaluation, bench: str, kind: Kind, env: str, load: str) -> list[tuple[str, str]]:
        out = []
        for figure in ("avg_us", "p99_us", "p9999_us", "max_us"):
            s = ev.summary(env, load, bench, figure)
            if s:
                out.append((kind.label(figure), format_value(s.median, "us")))
        s = ev.summary(env, load, bench, "max_us")
        if s:
            out.append(("worst max", format_value(s.max, "us")))
        return out

    def key_caption(self) -> str:
        return "medians over the repetitions; worst max = the largest max of any repetition"

    def run_tables(self, ev: Evaluation, benches: list[str]) -> list[Table]:
        t = matrix_table(ev, benches)
        return [t] if t else []

    def json(self, ev: Evaluation, benches: list[str]) -> dict[str, Any]:
        return {
            "latency_by_environment": {b: [r.to_dict() for r in latency_by_environment(ev.data, b)] for b in benches},
            "interference": [_ranking_json(rk) for b in benches for rk in _analysed(ev, b).rankings],
            "response_matrix": [_matrix_json(ev, r) for b in benches for r in _analysed(ev, b).matrix],
            "tails": {b: [c.to_dict() for c in _analysed(ev, b).tails] for b in benches},
            "spikes": {b: [c.to_dict() for c in _analysed(ev, b).spikes] for b in benches},
        }

    def distribution_axis(self) -> str:
        return "latency"


def _how(ev: Evaluation, bench: str) -> str:
    """How the benchmark ran, from the run's resolved campaign (its defaults included)."""
    p = keys.of(ev.data.benchmark_params(bench))
    if p is None:
        return ""
    how = []
    if p.loops:
        how.append(f"{p.loops:,} loops per CPU")
    elif p.duration_s:
        how.append(f"{p.duration_s:g} s per repetition")
    if p.interval_us:
        how.append(f"an interval of {p.interval_us:g} us")
    how.append(_sched_words(p, long=True))
    return ", ".join(x for x in how if x)


def _cpu_table(ev: Evaluation, bench: str) -> Table | None:
    """cyclictest's per-thread table: per environment, load and CPU the count, min, avg, p99.9, max and
    missed periods (medians over the completed repetitions; the max also as the worst of any repetition)."""
    data = ev.data
    rows = []
    for env, load in data.cells(bench):
        ms = data.measurements(env, load, bench, COMPLETE)
        cpus = sorted({c for m in ms for c in data.result(m).cpus})
        params = keys.of(data.benchmark_params(bench))
        interval = f"{params.interval_us:g}" if params and params.interval_us else "–"
        for cpu in cpus:
            cells = [env, load, str(cpu), _sched_words(params) or "–", interval]
            for figure in CPU_TABLE:
                s = ev.summary(env, load, bench, cpu_figure(cpu, figure))
                cells.append("–" if s is None else _cell(s.median, figure))
            worst = ev.summary(env, load, bench, cpu_figure(cpu, "max_us"))
            cells.append("–" if worst is None else _cell(worst.max, "max_us"))
            rows.append(Row(cells))
    if not rows:
        return None
    header = ["Environment", "Load", "CPU", "Policy / priority", "Interval (us)", "Count", "Min (us)", "Avg (us)",
              "p99.9 (us)", "Max (us)", "Missed", "Worst max (us)"]
    return Table(f"{bench}: per CPU (median over the completed repetitions)", header, rows, numeric_from=4,
                 note="One measuring thread per CPU, pinned, like cyclictest's per-thread lines (C, Min, Avg, Max). "
                      "A requirement, the CSV and the JSON address one CPU as `<benchmark>.cpu<N>.<figure>`, e.g. "
                      f"`{bench}.cpu0.max_us`.")


def _sched_words(params: LatencyParams | None, long: bool = False) -> str:
    if params is None or not params.policy:
        return ""
    if params.policy == "other":
        return "normal priority" if long else "other"
    return (f"priority {params.priority} ({params.policy})" if long
            else f"{params.policy} {params.priority}")


def _cpu_plots(ev: Evaluation, bench: str, id_prefix: str) -> list[Plot]:
    """Per cell a latency histogram with one curve per CPU (the OSADL style: linear latency axis,
    log count, the maximum of each CPU marked)."""
    out = []
    for i, (env, load) in enumerate(ev.data.cells(bench)):
        cpus = sorted({c for m in ev.data.measurements(env, load, bench, COMPLETE)
                       for c in ev.data.result(m).cpu_distributions})
        curves = [(f"CPU {c}", ev.merged_distribution(env, load, bench, "wake-up", cpu=c)) for c in cpus]
        svg = plots.per_cpu_histogram_svg(curves, f"{bench}: {env} under {load}, latency per CPU", f"{id_prefix}p{i}")
        if svg:
            out.append(Plot(f"Latency per CPU in {env} under {load}: linear latency axis, log count, one curve "
                            "per CPU, each CPU's maximum marked (all completed repetitions merged)", svg))
    return out


def _cell(value: float | None, figure: str) -> str:
    unit = suffix_unit(figure)
    if value is None:
        return "–"
    if unit in ("ns", "us", "ms"):
        return format_time(value, unit)
    return format_value(value, unit)


def _repetition_table(ev: Evaluation, bench: str, env: str, load: str) -> Table:
    data = ev.data
    kind = data.kind(bench)
    ms = data.measurements(env, load, bench)
    present = sorted({f for m in ms for f in data.figures(m)})
    figures = kind.row_figures(present)
    # The load and the CPUs each repetition ran under, next to its figures (when recorded).
    achieved = {m.id: measurement_achieved_text(ev, m) for m in ms}
    busy = {m.id: measurement_busy_text(ev, m) for m in ms}
    extra = (["Load achieved"] if any(achieved.values()) else []) + (["CPU busy"] if any(busy.values()) else [])
    header = ["Run", "Status"] + [kind.label(f) + (" (us)" if suffix_unit(f) in ("ns", "us", "ms") else "")
                                  for f in figures] + extra
    rows = []
    for m in ms:
        f = data.figures(m)
        if m.status == "error" or not f:
            rows.append(Row([str(m.repetition + 1), m.status,
                             (m.error or "no results") if m.status == "error" else "no results"], "failed"))
            continue
        more = ([achieved[m.id] or "–"] if "Load achieved" in extra else []) + (
            [busy[m.id] or "–"] if "CPU busy" in extra else [])
        rows.append(Row([str(m.repetition + 1), m.status] + [_cell(f.get(x), x) for x in figures] + more,
                        "" if m.status == "ok" else "failed"))
    foot = []
    for label, pick in (("Ave", lambda s: s.mean), ("Min", lambda s: s.min), ("Max", lambda s: s.max)):
        cells = [label, ""]
        for x in figures:
            s = ev.summary(env, load, bench, x)
            v = pick(s) if s is not None else None
            cells.append(_cell(v, x))
        foot.append(Row(cells + [""] * len(extra), "summary"))
    said = cell_achieved_text(ev, env, load, bench)
    return Table(f"{bench}: `{env}` under `{load}`" + (f" ({said})" if said else ""), header, rows, foot,
                 numeric_to=2 + len(figures) if extra else None,
                 note="Ave/Min/Max rows are over the completed repetitions only."
                      + (" CPU busy: per CPU, from /proc/stat while the probe ran." if "CPU busy" in extra else ""))


def latency_environment_table(ev: Evaluation, bench: str):
    """Minimum, average and maximum wake-up latency per environment over every sample (with the load
    as a second column when the benchmark ran under several)."""
    data = ev.data
    rows = latency_by_environment(data, bench)
    envs = {r.environment for r in rows}
    if len(envs) < 2:
        return None
    loads = list(dict.fromkeys(r.load for r in rows))
    with_load = len(loads) > 1
    header = ["Environment"] + (["Load"] if with_load else []) + [
        "Minimum latency (us)", "Average latency (us)", "Maximum latency (us)", "Samples"]
    out = []
    for r in sorted(rows, key=lambda r: (loads.index(r.load), data.environments.index(r.environment)
                                         if r.environment in data.environments else 99)):
        out.append(Row([r.environment] + ([r.load] if with_load else [])
                       + [_us(r.min_us), _us(r.avg_us), _us(r.max_us), f"{r.samples:,}"],
                       "" if r.repetitions else "failed"))
    return Table(f"{bench}: wake-up latency per environment, {_how(ev, bench)}", header, out,
                 numeric_from=2 if with_load else 1,
                 note="Over every sample of the completed repetitions: the smallest and the largest of any "
                      "repetition, and the mean of all samples.")


def _us(v: float | None) -> str:
    if v is None:
        return "–"
    # Whole microseconds with separators from 1000 us on, as evaluation reports print 50,835.
    return f"{v:,.0f}" if abs(v) >= 1000 else format_time(v, "us")


def ranking_table(ev: Evaluation, rk: Ranking, kind: Kind) -> Table:
    what = kind.label(rk.figure)
    misses = "deadline misses" if rk.misses_figure == "deadline_misses" else "missed periods"
    heading = p_heading([r.test for r in rk.rows])
    header = ["Rank", "Load", f"Victim {what} (median, us)", "Ratio to baseline", "95 % CI", heading,
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
                     p_text(t, marked=heading == "p"),
                     f"{t.n_baseline} vs {t.n_candidate}" if t else "–", t.verdict if t else "–"]
            css = t.verdict.replace(" ", "-") if t else ""
        cells += [f"{r.misses:,}", ", ".join(str(x) for x in r.misses_per_repetition) or "–",
                  achieved or load_kind_words(ev, r.load, rk.environment)]
        rows.append(Row(cells, css))
    return Table(f"{rk.benchmark} in `{rk.environment}`: aggressors ranked by the victim's degradation (worst first)",
                 header, rows, numeric_from=2, numeric_to=len(header) - 1,
                 note=f"Ratio = median over repetitions of the victim's {what} under the load / the same under "
                      f"`{rk.baseline_load}`, with its 95 % CI and the verdict of the load comparisons: "
                      "equivalent (90 % interval within the equivalence margin), significant, or cannot tell. "
                      f"Ranked by the ratio, then by {misses}. A place below the baseline alone shows no "
                      "harmlessness: only an equivalent verdict without more misses does.")


def matrix_table(ev: Evaluation, benches: list[str]) -> Table | None:
    rows_in = [r for b in benches for r in _analysed(ev, b).matrix]
    cells = {(r.environment, r.benchmark, r.load) for r in rows_in}
    if len(cells) < 2 or len({r.load for r in rows_in}) < 2:
        return None        # one cell is not a matrix; the benchmark's own tables say it all
    rows = []
    for r in rows_in:
        usage = ev.cell(r.environment, r.load, r.benchmark).cpu_usage
        total = next((u for u in usage if u.cpu == "all"), None)
        rows.append(Row([r.environment, r.benchmark,
                         format_time(r.interval_ns, "ns") if r.interval_ns else "–",
                         format_time(r.work_ns, "ns") if r.work_ns else "–", r.load,
                         (cell_achieved_text(ev, r.environment, r.load, r.benchmark)
                          or load_kind_words(ev, r.load, r.environment)),
                         f"{total.busy:.0f} %" if total else "–",
                         "response" if r.response else "wake-up",
                         format_time(r.cell.avg_us, "us"), format_time(r.cell.max_us, "us"),
                         format_time(r.cell.stddev_us, "us"), f"{r.cell.misses:,}", f"{r.cell.samples:,}"]))
    return Table("Response-time matrix: period x load",
                 ["Environment", "Benchmark", "Interval (us)", "Work (us)", "Load", "Load achieved", "CPU busy",
                  "Measured", "avg (us)", "max (us)", "stddev (us)", "Deadline misses", "Samples"],
                 rows, numeric_from=8,
                 note="Over all samples of the completed repetitions of each cell: avg and standard deviation pooled "
                      "exactly from each repetition's count, mean and deviation; max the largest of any repetition. "
                      "Measured: response time (work completion - deadline) when the benchmark has a work budget, "
                      "else wake-up latency. Deadline misses: activations whose response time exceeded the "
                      "interval with a work budget; without one, periods missed by a wake-up later than a whole "
                      "interval.")


def _ranking_json(rk: Ranking) -> dict[str, Any]:
    return {"benchmark": rk.benchmark, "environment": rk.environment, "baseline_load": rk.baseline_load,
            "figure": rk.figure, "misses_figure": rk.misses_figure,
            "ranking": [{"rank": i, "load": r.load, "baseline": r.is_baseline, "median": r.median,
                         "ratio": r.ratio,
                         "ci95_ratio": [r.test.ci_low, r.test.ci_high] if r.test and r.test.ci_low is not None else None,
                         "p_value": r.test.p_value if r.test else None,
                         "p_test": r.test.p_test if r.test else None,
                         "method": r.test.method if r.test else None,
                         "verdict": r.test.verdict if r.test else "baseline",
                         "misses": r.misses, "misses_per_repetition": r.misses_per_repetition}
                        for i, r in enumerate(rk.rows, start=1)]}


def _matrix_json(ev: Evaluation, r: MatrixRow) -> dict[str, Any]:
    return {"environment": r.environment, "benchmark": r.benchmark, "load": r.load,
            "interval_ns": r.interval_ns, "work_ns": r.work_ns,
            "measured": "response" if r.response else "wake-up", "repetitions": r.cell.repetitions,
            "samples": r.cell.samples, "avg_ns": _ns(r.cell.avg_us), "max_ns": _ns(r.cell.max_us),
            "stddev_ns": _ns(r.cell.stddev_us), "misses": r.cell.misses, "misses_figure": r.misses_figure,
            "load_achieved": cell_achieved_text(ev, r.environment, r.load, r.benchmark, quote=False)}


def _ns(us: float | None) -> float | None:
    return None if us is None else us * 1000


register(LatencySection())


def tail_table(cells: list[CellTail], bench: str) -> Table | None:
    """Per cell: samples, observed max, what they cannot cover, and the extreme-value estimate."""
    if not cells:
        return None
    rows = []
    for c in cells:
        e = c.estimate
        estimate = time_text(e.value) if e.ok else "–"
        ci = f"{time_text(e.ci_low)} .. {time_text(e.ci_high)}" if e.ok else "–"
        rows.append(Row([c.environment, c.load, f"{c.samples:,}", time_text(c.max_us), c.coverage, estimate, ci,
                         f"{e.shape:.2f}" if e.ok else (e.refused or "–")]))
    what = "response time" if cells[0].distribution == "response" else "wake-up latency"
    return Table(f"{bench}: tail of the {what}, observed and estimated",
                 ["Environment", "Load", "Samples", "Observed max", "Not covered",
                  "Estimate: exceeded once in 10^6", "95 % CI", "Shape (or why no estimate)"],
                 rows, numeric_from=2, numeric_to=4,
                 note="Observed: the largest of all samples of the cell's completed repetitions. Estimate: "
                      "a generalized Pareto distribution fitted by maximum likelihood to the largest samples "
                      "(peaks over threshold), extrapolated to a probability of 10^-6 per activation, with a "
                      "profile-likelihood interval; an estimate under that model, refused when the fit is "
                      "rejected, the tail is bounded (shape below -0.5), too heavy to extrapolate (shape 0.5 "
                      "or more: no finite variance), the interval spans more than a factor 100 or the "
                      "samples are too few.")


#: trace excerpts shown per cell; the JSON export has every one
EXCERPTS_PER_CELL = 10


def spike_tables(cells: list[CellSpikes], params: LatencyParams | None) -> list[Table]:
    """The counts by cause per cell, then each cell's traced spikes (per CPU, in time order)."""
    if not cells:
        return []
    causes = [c for c in CAUSES if any(c in cell.counts for cell in cells)]
    threshold = params.trace_threshold_us if params else None
    limit = params.trace_breaches if params else None
    rows = [Row([f"`{c.environment}`", f"`{c.load}`", str(len(c.spikes)), str(c.untraced)]
                + [str(c.counts.get(cause, 0)) for cause in causes]) for c in cells]
    out = [Table(f"Traced spikes by cause: wake-ups later than {threshold:g} us",
                 ["Environment", "Load", "Traced", "Not traced"] + [CAUSE_WORDS[c] for c in causes], rows,
                 note=(f"The probe saves the kernel trace of at most {limit} breaches per measurement, and none "
                       "while it is saving one: those are counted as not traced. The cause is what took most of the "
                       "longest phase of the late wake-up (timer, scheduling, return to the thread)."),
                 numeric_from=2)]
    for c in cells:
        if not c.spikes:
            continue
        ordered = sorted(c.spikes, key=lambda s: (s.cpu, s.repetition or 0, s.offset_s or 0.0))
        out.append(Table(
            f"Traced spikes: `{c.environment}` under `{c.load}`",
            ["Repetition", "CPU", "At (s)", "Latency", "Timer delay", "Scheduling delay", "Cause", "Culprit"],
            [Row([str(s.repetition), str(s.cpu), f"{s.offset_s:.3f}" if s.offset_s is not None else "-",
                  format_value(s.latency_ns / 1000, "us"), format_value(s.phases_ns.get("timer", 0) / 1000, "us"),
                  format_value(s.phases_ns.get("scheduling", 0) / 1000, "us"), s.cause, s.culprit or "-"])
             for s in ordered],
            note="Timer delay: from the deadline to the timer firing; scheduling delay: from then to the switch "
                 "to the measuring thread.", numeric_from=1, numeric_to=6))
    return out


def spike_excerpts(cells: list[CellSpikes]) -> list[Excerpt]:
    out = []
    for c in cells:
        for s in sorted(c.spikes, key=lambda s: -s.latency_ns)[:EXCERPTS_PER_CELL]:
            at = f" at {s.offset_s:.3f} s" if s.offset_s is not None else ""
            title = (f"Trace of `{c.environment}` under `{c.load}`, repetition {s.repetition}, CPU {s.cpu}{at}: "
                     f"{format_value(s.latency_ns / 1000, 'us')}, {s.cause}" + (f" ({s.culprit})" if s.culprit else ""))
            out.append(Excerpt(title, s.explanation + "\n\n" + "\n".join(s.excerpt)))
    return out
