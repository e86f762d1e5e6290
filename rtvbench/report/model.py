"""The report's content as plain data: sections, tables of formatted cells, sentences, plots.

HTML and Markdown render this same model, so both formats always say the
same thing. Cells hold raw user-supplied text; escaping is the renderer's job.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from rtvbench.analysis.dataset import COMPLETE
from rtvbench.analysis.evaluation import Evaluation
from rtvbench.analysis.kinds.quantities import QuantityKind
from rtvbench.analysis.metrics import unit_of
from rtvbench.analysis.stats import summarize
from rtvbench.analysis.units import format_time, format_value
from rtvbench.report import plots


@dataclass
class Row:
    cells: list[str]
    css: str = ""                  # "summary", "failed", "differs", "pass", "fail", "inconclusive"


@dataclass
class Table:
    caption: str
    header: list[str]
    rows: list[Row]
    foot: list[Row] = field(default_factory=list)
    note: str = ""
    numeric_from: int | None = None    # first right-aligned column; None: the renderer's default
    numeric_to: int | None = None      # first column after them that is text again; None: none


@dataclass
class Plot:
    title: str
    svg: str


@dataclass
class Sentence:
    severity: str                  # "info" | "warning"
    text: str                      # names in backticks


@dataclass
class BenchmarkSection:
    name: str
    kind: str
    description: str
    preconditions: list[str]
    commands: list[tuple[str, list[str], list[str]]]   # (cell title, probe commands, load commands)
    repetition_tables: list[Table]
    comparison_tables: list[Table]
    plots: list[Plot]
    consideration: list[Sentence]
    load_tables: list[Table] = field(default_factory=list)      # achieved load, CPU usage (/proc/stat)
    ranking_tables: list[Table] = field(default_factory=list)   # aggressors by the victim's degradation


@dataclass
class ReportModel:
    title: str
    run_id: int
    facts: list[tuple[str, str]]                   # campaign, run, dates ...
    environments: Table
    loads: Table
    benchmarks: Table
    verdicts: Table
    key_results: Table
    warnings: list[Sentence]
    fingerprints: Table | None                     # side by side, differing rows highlighted
    sections: list[BenchmarkSection]
    matrix: Table | None = None                    # the 003 response-time matrix
    # Recorded fields left out of the fingerprint table: equal in every environment (collapsed)
    fingerprint_equal: list[tuple[str, str]] = field(default_factory=list)
    preflight: list[Sentence] = field(default_factory=list)    # rtvbench.preflight, shown at the top
    # Measurements during which a target went away (a guest crashed or hung, a connection dropped)
    target_failures: list["TargetFailure"] = field(default_factory=list)


@dataclass
class TargetFailure:
    title: str                     # "guest / idle / wakeup, repetition 2, attempt 1"
    error: str
    log: str                       # the end of the target's own log: a guest's serial console


LOG_LINES = 60                     # of a failure's log in the report; the store keeps all of it


def _target_failures(run) -> list[TargetFailure]:
    failed = [m for m in list(run.failed_attempts) + list(run.measurements) if m.target_log]
    failed.sort(key=lambda m: (m.started_at is None, m.started_at, m.id))
    return [TargetFailure(f"{m.environment} / {m.load} / {m.benchmark}, repetition {m.repetition + 1}, "
                          f"attempt {m.attempt}", m.error or "the target went away",
                          "\n".join(m.target_log.rstrip().splitlines()[-LOG_LINES:])) for m in failed]


def _when(dt) -> str:
    return dt.strftime("%Y-%m-%d %H:%M:%S %Z").strip() if dt else "–"


def _describe_table(table: dict[str, Any]) -> str:
    if not table:
        return "–"
    return ", ".join(f"{k} = {v}" for k, v in table.items())


def _load_words(ev: Evaluation, load: str) -> str:
    t = ev.data.load_table(load)
    if not t:
        return "no load"
    if isinstance(t.get("combine"), list):
        parts = [p for p in t["combine"] if isinstance(p, str)]
        return "several loads at once: " + "; ".join(
            f"`{p}` = {_load_words(ev, p)}" for p in parts if p != load)
    if "command" in t:
        where = t.get("where")
        text = f"external command `{t['command']}`"
        if where and where != "same":
            text += f", running in environment `{where}` (measured here, loaded there)"
        return text
    if "kind" in t:
        rest = {k: v for k, v in t.items() if k not in ("kind", "where")}
        text = f"probe load generator `{t['kind']}`" + (f" ({_describe_table(rest)})" if rest else "")
        if t.get("where") and t["where"] != "same":
            text += f", running in environment `{t['where']}`"
        return text
    return _describe_table(t)


def build(ev: Evaluation, with_plots: bool) -> ReportModel:
    data, run = ev.data, ev.data.run
    total = len(run.measurements)
    ok = sum(1 for m in run.measurements if m.status == "ok")
    facts = [("Campaign", run.campaign_name), ("Run", f"#{run.id} ({run.status})"),
             ("Started", _when(run.started_at)), ("Finished", _when(run.finished_at)),
             ("Repetitions", str(data.repetitions) if data.repetitions is not None else "–"),
             ("Measurements", f"{ok} of {total} completed")]

    envs = Table("Environments", ["Environment", "Definition", "Role"],
                 [Row([e, _describe_table(data.environment_table(e)),
                       "baseline" if e == data.baseline_environment else "candidate"]) for e in data.environments])
    loads = _loads_table(ev)
    benches = Table("Benchmarks", ["Benchmark", "Kind", "Parameters"],
                    [Row([b, data.kind_name(b) or "?",
                          _describe_table({k: v for k, v in data.benchmark_table(b).items() if k != "kind"})])
                     for b in data.benchmarks])

    verdicts = Table("Requirement verdicts", ["#", "Requirement", "Verdict", "Reason"],
                     [Row([str(i + 1), v.title, v.status, v.reason], v.status.lower())
                      for i, v in enumerate(ev.verdicts)],
                     note="" if ev.verdicts else "The campaign states no requirements.")

    warnings = [Sentence("warning", f"{b}: {f.text}") for b, fs in ev.findings.items()
                for f in fs if f.severity == "warning"]
    from rtvbench.report.environments import fingerprint_view, preflight
    from rtvbench.report.loads import matrix_table
    prints = fingerprint_view(ev)
    return ReportModel(
        title=f"Evaluation report: {run.campaign_name}", run_id=run.id, facts=facts, environments=envs, loads=loads,
        benchmarks=benches, verdicts=verdicts, key_results=_key_results(ev), warnings=warnings,
        fingerprints=prints.table if prints else None,
        sections=[_section(ev, b, with_plots, f"plot{i}") for i, b in enumerate(data.benchmarks)],
        matrix=matrix_table(ev), fingerprint_equal=prints.equal_fields if prints else [],
        preflight=[Sentence("warning", w.sentence) for w in preflight(ev)],
        target_failures=_target_failures(run))


def _loads_table(ev: Evaluation) -> Table:
    """The campaign's loads; with what the probe loads achieved over all their measurements."""
    from rtvbench.analysis.load_achieved import describe_all, load_order, mean_achieved, measurement_achieved

    data = ev.data
    achieved = {ld: describe_all(mean_achieved([measurement_achieved(m, load_order(data, ld))
                                                for m in data.measurements(load=ld, statuses=COMPLETE)]))
                for ld in data.loads}
    header = ["Load", "What runs", "Role"]
    rows = [[ld, _load_words(ev, ld), "baseline" if ld == data.baseline_load else "candidate"] for ld in data.loads]
    if any(achieved.values()):
        header.append("Achieved (mean over all its measurements)")
        rows = [r + [achieved[r[0]] or "–"] for r in rows]
    return Table("Loads", header, [Row(r) for r in rows])


def _key_results(ev: Evaluation) -> Table:
    data = ev.data
    header = ["Benchmark", "Environment", "Load", "Runs ok", "avg (us)", "p99 (us)", "p99.99 (us)",
              "max (us)", "worst max (us)"]
    rows = []
    for b in data.benchmarks:
        kind = data.kind(b)
        for env, load in data.cells(b):
            ms = data.measurements(env, load, b)
            done = sum(1 for m in ms if m.status in COMPLETE)
            cells = [b, env, load, f"{done}/{len(ms)}"]
            if isinstance(kind, QuantityKind):
                cells.append(kind.key_result(data, b, env, load) or "see its section")   # spans the columns
            elif kind is not None and kind.is_figure("max_us"):
                for figure in ("avg_us", "p99_us", "p9999_us", "max_us"):
                    s = ev.summary(env, load, b, figure)
                    cells.append(format_time(s.median, "us") if s else "–")
                s = ev.summary(env, load, b, "max_us")
                cells.append(format_time(s.max, "us") if s else "–")
            else:
                cells += ["–"] * 5
            rows.append(Row(cells, "" if done == len(ms) else "failed"))
    return Table("Key results (median over repetitions; worst = largest max of any repetition)", header, rows)


def _section(ev: Evaluation, bench: str, with_plots: bool, id_prefix: str) -> BenchmarkSection:
    data = ev.data
    kind = data.kind(bench)
    kind_name = data.kind_name(bench) or "?"
    first = next((m for m in data.measurements(benchmark=bench) if m.meta), None)
    params = (first.meta or {}).get("params") if first else None
    description = (kind.describe(data.benchmark_table(bench), params) if kind else
                   f"Benchmark kind `{kind_name}` is not known to this version of rtvbench; its raw results are "
                   "kept in the store.")

    pre = []
    for env in data.environments:
        if any(e == env for e, _ in data.cells(bench)):
            t = data.environment_table(env)
            pre.append(f"Environment `{env}`: target {t.get('target', '?')}"
                       + (f" ({_describe_table({k: v for k, v in t.items() if k != 'target'})})" if len(t) > 1 else "")
                       + ("; the baseline of the comparisons." if env == data.baseline_environment else "."))
    from rtvbench.report.loads import cell_achieved_text, ranking_table, usage_tables
    for load in data.loads:
        if any(ld == load for _, ld in data.cells(bench)):
            where = [env for env, ld in data.cells(bench) if ld == load]
            achieved = [(env, cell_achieved_text(ev, env, load, bench)) for env in where]
            said = "; ".join((f"in `{env}` " if len(where) > 1 else "") + text for env, text in achieved if text)
            pre.append(f"Load `{load}`: {_load_words(ev, load)}"
                       + ("; the baseline of the load comparisons" if load == data.baseline_load else "")
                       + (f". Achieved during these measurements: {said}." if said else "."))
    reps = data.repetitions
    pre.append(f"{reps if reps is not None else 'The'} repetitions per environment and load, run in a randomised, "
               "seeded order so that drift cannot masquerade as overhead.")
    privileges = {}
    for m in data.measurements(benchmark=bench):
        p = (m.meta or {}).get("privileges")
        if isinstance(p, dict) and "rt_granted" in p:
            privileges.setdefault((m.environment, bool(p["rt_granted"])), 0)
            privileges[(m.environment, bool(p["rt_granted"]))] += 1
    denied = sorted({env for (env, granted) in privileges if not granted})
    if privileges:
        pre.append("Real-time priority was granted in every measurement." if not denied else
                   "Real-time priority was NOT granted in " + ", ".join(f"`{e}`" for e in denied)
                   + ": those figures show a normal-priority thread.")

    commands = []
    for env, load in data.cells(bench):
        ms = data.measurements(env, load, bench)
        probe_cmds = list(dict.fromkeys(shlex.join(m.command) for m in ms if m.command))
        load_cmds = list(dict.fromkeys(c for m in ms for c in m.load_commands))
        commands.append((f"{env} / {load}", probe_cmds, load_cmds))

    if isinstance(kind, QuantityKind):
        # The measurement-suite kinds: LMbench-style tables and their own plots (report.suite).
        from rtvbench.report import suite
        rep_tables, comparison_tables, figures = suite.parts(ev, bench, kind, with_plots, id_prefix)
    else:
        rep_tables, comparison_tables, figures = _latency_parts(ev, bench, kind, with_plots, id_prefix)
    if with_plots:
        figures = figures + _vm_scaling_plots(ev, bench, kind, id_prefix)
    consideration = [Sentence(f.severity, f.text) for f in ev.findings.get(bench, [])]
    rankings = [ranking_table(ev, rk) for rk in ev.rankings if rk.benchmark == bench]
    return BenchmarkSection(bench, kind_name, description, pre, commands, rep_tables, comparison_tables,
                            figures, consideration, usage_tables(ev, bench), rankings)


def _vm_scaling_plots(ev: Evaluation, bench: str, kind, id_prefix: str) -> list[Plot]:
    """Figures against the number of VMs, one plot per figure, one line per load (002's 1..5 VMs):
    the average and the maximum for latency, the first compared figures of the other kinds."""
    from rtvbench.analysis.vm_scaling import scaling_series
    series = scaling_series(ev.data, bench)
    figures = list(dict.fromkeys(s.figure for s in series))
    chosen = [f for f in ("avg_us", "max_us") if f in figures] if kind and kind.name == "latency" else figures[:3]
    several_guests = len({s.points[0].environment for s in series}) > 1     # several curves per load
    out = []
    for i, figure in enumerate(chosen):
        lines = [(s.load + (f" ({s.points[0].environment} .. {s.points[-1].environment})" if several_guests else ""),
                  [(p.count, p.median, p.low, p.high) for p in s.points])
                 for s in series if s.figure == figure]
        label = kind.label(figure) if kind else figure
        unit = unit_of(figure)
        svg = plots.vm_count_svg(lines, f"{bench}: {label} against the number of VMs",
                                 f"{label} ({'us' if unit in ('ns', 'us', 'ms') else unit})", f"{id_prefix}v{i}")
        if svg:
            out.append(Plot(f"{label} against the number of VMs (median of the repetitions, min..max bars; "
                            "the benchmark runs in the first VM, `neighbours` loads in the others)", svg))
    return out


def _latency_parts(ev: Evaluation, bench: str, kind, with_plots: bool, id_prefix: str):
    data = ev.data
    rep_tables = [_repetition_table(ev, bench, env, load) for env, load in data.cells(bench)] if kind else []
    from rtvbench.report.environments import latency_environment_table, overhead_tables
    # Reference 002: min / average / max per environment first, then one overhead table per compared pair.
    per_env = latency_environment_table(ev, bench) if kind else None
    comparison_tables = ([per_env] if per_env else []) + overhead_tables(ev, bench, kind)
    figures = _plots(ev, bench, id_prefix) if with_plots and kind else []
    return rep_tables, comparison_tables, figures


def _cell(value: float | None, figure: str) -> str:
    unit = unit_of(figure)
    if value is None:
        return "–"
    if unit in ("ns", "us", "ms"):
        return format_time(value, unit)
    return format_value(value, unit)


def _repetition_table(ev: Evaluation, bench: str, env: str, load: str) -> Table:
    from rtvbench.report.loads import cell_achieved_text, measurement_achieved_text, measurement_busy_text

    data = ev.data
    kind = data.kind(bench)
    ms = data.measurements(env, load, bench)
    present = sorted({f for m in ms for f in data.figures(m)})
    figures = kind.row_figures(present)
    # The load and the CPUs each repetition ran under, next to its figures (when recorded).
    achieved = {m.id: measurement_achieved_text(ev, m) for m in ms}
    busy = {m.id: measurement_busy_text(m) for m in ms}
    extra = (["Load achieved"] if any(achieved.values()) else []) + (["CPU busy"] if any(busy.values()) else [])
    header = ["Run", "Status"] + [kind.label(f) + (" (us)" if unit_of(f) in ("ns", "us", "ms") else "")
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
            s = summarize(data.values(env, load, bench, x))
            v = pick(s) if s.n else None
            cells.append(_cell(v, x))
        foot.append(Row(cells + [""] * len(extra), "summary"))
    said = cell_achieved_text(ev, env, load, bench)
    return Table(f"{bench}: `{env}` under `{load}`" + (f" ({said})" if said else ""), header, rows, foot,
                 numeric_to=2 + len(figures) if extra else None,
                 note="Ave/Min/Max rows are over the completed repetitions only."
                      + (" CPU busy: per CPU, from /proc/stat while the probe ran." if "CPU busy" in extra else ""))


def _plots(ev: Evaluation, bench: str, id_prefix: str) -> list[Plot]:
    data = ev.data
    cells = data.cells(bench)
    curves = [(f"{env} / {load}", ev.merged_histogram(env, load, bench)) for env, load in cells]
    out = []
    svg = plots.histogram_svg(curves, f"{bench}: latency histogram (all completed repetitions merged)",
                               f"{id_prefix}h")
    if svg:
        out.append(Plot("Latency histogram (log count axis)", svg))
    svg = plots.ccdf_svg(curves, f"{bench}: CCDF", f"{id_prefix}c")
    if svg:
        out.append(Plot("CCDF: fraction of samples above a latency (log axis)", svg))
    # The wake-up latency, and with a work budget the response time too (windows carry both).
    for key, title, ylabel, caption, suffix in (
            ("max_ns", "maximum latency per window", "window max latency (us)",
             "Maximum per window over time (one line per repetition, all CPUs)", "w"),
            ("response_max_ns", "maximum response time per window", "window max response time (us)",
             "Maximum response time per window over time (one line per repetition, all CPUs)", "r")):
        series = _window_series(data, cells, bench, key)
        svg = plots.windows_svg(series, f"{bench}: {title}", f"{id_prefix}{suffix}", ylabel)
        if svg:
            out.append(Plot(caption, svg))
    return out


def _window_series(data, cells, bench: str, key: str):
    """Per cell, per repetition: (window end in s, the largest `key` of any CPU in that window, in us)."""
    series = []
    for env, load in cells:
        reps = []
        for m in data.measurements(env, load, bench, ("ok", "interrupted")):
            per_index: dict[int, tuple[float, float]] = {}
            for w in m.windows:
                if w.get(key) is None or w.get("index") is None:
                    continue
                t_end = (w.get("t_end_ns") or 0) / 1e9
                prev = per_index.get(w["index"])
                value = w[key] / 1000
                per_index[w["index"]] = (t_end, value if prev is None else max(prev[1], value))
            pts = [per_index[i] for i in sorted(per_index)]
            reps.append(([p[0] for p in pts], [p[1] for p in pts]))
        series.append((f"{env} / {load}", reps))
    return series
