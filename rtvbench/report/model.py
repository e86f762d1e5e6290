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
from rtvbench.analysis.load_achieved import definition_words, describe_all
from rtvbench.units import counted, suffix_unit
from rtvbench.report import plots
from rtvbench.report.environments import fingerprint_view
from rtvbench.report.loads import cell_achieved_text, usage_tables
from rtvbench.report.section import section_for
from rtvbench.report.run_section import with_parts
from rtvbench.report.tables import Excerpt, Headline, Plot, Row, Sentence, Table


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
    excerpts: list[Excerpt] = field(default_factory=list)       # folded texts: kernel traces of spikes
    procedure: str | None = None        # how a measurement is made beyond its commands (a boot's power cycle)


@dataclass
class ReportModel:
    title: str
    run_id: int
    facts: list[tuple[str, str]]                   # campaign, run, dates ...
    environments: Table
    loads: Table
    benchmarks: Table
    verdicts: Table
    key_results: list[Table]                       # one per benchmark kind: its own columns
    warnings: list[Sentence]
    fingerprints: Table | None                     # side by side, differing rows highlighted
    sections: list[BenchmarkSection]
    # Tables over the whole run that a kind adds to the summary (the response-time matrix)
    run_tables: list[Table] = field(default_factory=list)
    # Recorded fields left out of the fingerprint table: equal in every environment (collapsed)
    fingerprint_equal: list[tuple[str, str]] = field(default_factory=list)
    preflight: list[Sentence] = field(default_factory=list)    # rtvbench.preflight, shown at the top
    # Measurements during which a target went away (a guest crashed or hung, a connection dropped)
    target_failures: list["TargetFailure"] = field(default_factory=list)
    # This run against another one (`report --baseline`), after the benchmark sections
    against: "AgainstRun | None" = None
    # The run analyses' verdicts at the top of the summary (a soak's): a sentence and tables each
    headlines: list[Headline] = field(default_factory=list)


@dataclass
class AgainstRun:
    title: str                     # "Run 7 (nightly) against run 5 (nightly)"
    tables: list[Table]            # one per benchmark
    sentences: list[str]           # cells only one run has, parameters that differ
    fingerprints: list[Table]      # each environment in both runs


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
    spec = ev.data.load(load)
    if spec is None or spec.is_idle:
        return "no load"
    if spec.parts:
        return "several loads at once: " + "; ".join(
            f"`{p}` = {_load_words(ev, p)}" for p in spec.parts if p != load)
    return definition_words(spec)


def build(ev: Evaluation, with_plots: bool) -> ReportModel:
    data, run = ev.data, ev.data.run
    total = len(run.measurements)
    ok = sum(1 for m in run.measurements if m.status == "ok")
    facts = [("Campaign", run.campaign_name), ("Run", f"#{run.id} ({run.status})"),
             ("Started", _when(run.started_at)), ("Finished", _when(run.finished_at)),
             ("Rounds", f"{data.rounds} (every cell measured once per round)") if data.rounds is not None else
             ("Repetitions", str(data.repetitions) if data.repetitions is not None else "–"),
             ("Measurements", f"{ok} of {total} completed")]

    envs = Table("Environments", ["Environment", "Definition", "Role"],
                 [Row([e, _describe_table(data.environment_table(e)),
                       "baseline" if e == data.baseline_environment else "candidate"]) for e in data.environments])
    loads = _loads_table(ev)
    benches = Table("Benchmarks", ["Benchmark", "Kind", "Parameters"],
                    [Row([b, data.kind_name(b) or "?",
                          _describe_table({k: v for k, v in data.benchmark_params(b).items() if v is not None})])
                     for b in data.benchmarks])

    verdicts = Table("Requirement verdicts", ["#", "Requirement", "Verdict", "Reason"],
                     [Row([str(i + 1), v.title, v.status, v.reason], v.status.lower())
                      for i, v in enumerate(ev.verdicts)],
                     note="" if ev.verdicts else "The campaign states no requirements.")

    sections = with_parts(ev)
    applying = [(s, part) for s, part in sections if part is not None]
    warnings = _warning_pointers(ev) + [w for s, part in applying for w in s.warnings(ev, part)]
    prints = fingerprint_view(ev)
    return ReportModel(
        title=f"Evaluation report: {run.campaign_name}", run_id=run.id, facts=facts, environments=envs, loads=loads,
        benchmarks=benches, verdicts=verdicts, key_results=key_results(ev), warnings=warnings,
        fingerprints=prints.table if prints else None,
        sections=[_section(ev, b, with_plots, f"plot{i}") for i, b in enumerate(data.benchmarks)],
        run_tables=_run_tables(ev) + [t for s, part in applying for t in s.tables(ev, part)],
        fingerprint_equal=prints.equal_fields if prints else [],
        preflight=[Sentence("warning", w.sentence) for w in ev.run_parts.preflight],
        target_failures=_target_failures(run), against=_against(ev),
        headlines=[h for s, part in applying if (h := s.headline(ev, part)) is not None])


def _against(ev: Evaluation) -> AgainstRun | None:
    if ev.across is None:
        return None
    from rtvbench.report import across_runs as layout

    x = ev.across
    sentences = layout.unmatched_sentences(x)
    if not x.comparisons:
        sentences.append("No cell of one run matches a cell of the other: map the names that differ "
                         "(`report --baseline RUN --map A=B`).")
    return AgainstRun(layout.title(x), layout.tables(x), sentences, layout.fingerprint_tables(x))


#: what a warning of each topic is about, for the summary's one line per benchmark
_WARNING_TOPICS = {"deadline": "deadlines exceeded", "missed": "periods missed", "noisy": "noisy repetitions",
                   "probe-warning": "the probe's warnings", "failure": "failed or interrupted measurements",
                   "verification": "wrong workload results", "interference": "a load that made it faster",
                   "conditions": "measurement conditions not met", "result": "an unknown benchmark kind"}


def _warning_pointers(ev: Evaluation) -> list[Sentence]:
    """One line per benchmark with warnings: what they are about and where they are said in full (its
    Consideration), so that the summary points at each warning once instead of repeating it."""
    out = []
    for number, bench in enumerate(ev.data.benchmarks, start=3):
        topics = [f.topic for f in ev.findings.get(bench, []) if f.severity == "warning"]
        if topics:
            about = ", ".join(dict.fromkeys(_WARNING_TOPICS.get(t, t) for t in topics))
            out.append(Sentence("warning", f"`{bench}`: {len(topics)} warning{'s' if len(topics) != 1 else ''} "
                                           f"({about}), said in full in its Consideration ({number}.5)."))
    return out


def _loads_table(ev: Evaluation) -> Table:
    """The campaign's loads; with what the probe loads achieved over all their measurements."""
    data = ev.data
    achieved = {ld: describe_all(ev.run_parts.loads_achieved[ld]) for ld in data.loads}
    header = ["Load", "What runs", "Role"]
    rows = [[ld, _load_words(ev, ld), "baseline" if ld == data.baseline_load else "candidate"] for ld in data.loads]
    if any(achieved.values()):
        header.append("Achieved (mean over all its measurements)")
        rows = [r + [achieved[r[0]] or "–"] for r in rows]
    return Table("Loads", header, [Row(r) for r in rows])


def _run_tables(ev: Evaluation) -> list[Table]:
    """Each kind's tables over its benchmarks in the whole run, in the order the kinds first appear."""
    data = ev.data
    by_kind: dict[str | None, list[str]] = {}
    for b in data.benchmarks:
        by_kind.setdefault(data.kind_name(b), []).append(b)
    return [t for kind, benches in by_kind.items() for t in section_for(kind).run_tables(ev, benches)]


def key_results(ev: Evaluation) -> list[Table]:
    """One table per benchmark kind, in the order the kinds first appear: each kind's own columns (a
    latency's percentiles are not a memory curve's levels), a row per benchmark, environment and load."""
    data = ev.data
    by_kind: dict[str | None, list[str]] = {}
    for b in data.benchmarks:
        by_kind.setdefault(data.kind_name(b), []).append(b)
    tables = []
    for kind_name, benches in by_kind.items():
        section = section_for(kind_name)
        columns: dict[str, None] = {}
        cells = []
        for b in benches:
            kind = data.kind(b)
            for env, load in data.cells(b):
                ms = data.measurements(env, load, b)
                done = sum(1 for m in ms if m.status in COMPLETE)
                values = dict(section.key_columns(ev, b, kind, env, load)) if kind is not None else {}
                columns.update(dict.fromkeys(values))
                cells.append((b, env, load, f"{done}/{len(ms)}", values, ev.unclean(env, load, b), done != len(ms)))
        unclean_any = any(c[5] is not None for c in cells)
        header = ["Benchmark", "Environment", "Load", "Runs ok", *columns] + (["Conditions"] if unclean_any else [])
        rows = []
        for b, env, load, runs, values, unclean, incomplete in cells:
            row = [b, env, load, runs] + [values.get(c) or "–" for c in columns]
            if unclean_any:
                row.append("met" if unclean is None else f"not met in {len(unclean.failed)} of {unclean.measured} "
                                                         "repetitions (see the considerations)")
            rows.append(Row(row, "failed" if incomplete else "unclean" if unclean is not None else ""))
        what = f"{kind_name} benchmarks" if kind_name else "benchmarks of an unknown kind"
        tables.append(Table(f"Key results of the {what} ({section.key_caption()})", header, rows))
    return tables


def _section(ev: Evaluation, bench: str, with_plots: bool, id_prefix: str) -> BenchmarkSection:
    data = ev.data
    kind = data.kind(bench)
    kind_name = data.kind_name(bench) or "?"
    first = next((m for m in data.measurements(benchmark=bench) if m.meta), None)
    params = (first.meta or {}).get("params") if first else None
    description = (kind.describe(data.benchmark_params(bench), params) if kind else
                   f"Benchmark kind `{kind_name}` is not known to this version of rtvbench; its raw results are "
                   "kept in the store.")

    pre = []
    for env in data.environments:
        if any(e == env for e, _ in data.cells(bench)):
            t = data.environment_table(env)
            pre.append(f"Environment `{env}`: target {t.get('target', '?')}"
                       + (f" ({_describe_table({k: v for k, v in t.items() if k != 'target'})})" if len(t) > 1 else "")
                       + ("; the baseline of the comparisons." if env == data.baseline_environment else "."))
    for load in data.loads:
        if any(ld == load for _, ld in data.cells(bench)):
            where = [env for env, ld in data.cells(bench) if ld == load]
            achieved = [(env, cell_achieved_text(ev, env, load, bench)) for env in where]
            said = "; ".join((f"in `{env}` " if len(where) > 1 else "") + text for env, text in achieved if text)
            pre.append(f"Load `{load}`: {_load_words(ev, load)}"
                       + ("; the baseline of the load comparisons" if load == data.baseline_load else "")
                       + (f". Achieved during these measurements: {said}." if said else "."))
    reps = data.repetitions
    if data.rounds is not None:
        pre.append(f"A soak of {counted(data.rounds, 'round')}, each measuring every environment and load once.")
    else:
        pre.append(f"{counted(reps, 'repetition') if reps is not None else 'The repetitions'} per environment and "
                   "load, run in a randomised, seeded order so that drift cannot masquerade as overhead.")
    granted = [(env, ev.cell(env, load, bench).rt_granted) for env, load in data.cells(bench)]
    denied = sorted({env for env, ok in granted if ok is False})
    if any(ok is not None for _, ok in granted):
        pre.append("Real-time priority was granted in every measurement." if not denied else
                   "Real-time priority was NOT granted in " + ", ".join(f"`{e}`" for e in denied)
                   + ": those figures show a normal-priority thread.")

    commands = []
    for env, load in data.cells(bench):
        ms = data.measurements(env, load, bench)
        probe_cmds = list(dict.fromkeys(shlex.join(m.command) for m in ms if m.command))
        load_cmds = list(dict.fromkeys(c for m in ms for c in m.load_commands))
        commands.append((f"{env} / {load}", probe_cmds, load_cmds))

    parts = section_for(kind_name).parts(ev, bench, kind, with_plots, id_prefix) if kind else None
    applying = [(s, part) for s, part in with_parts(ev) if part is not None]
    figures = []
    if with_plots and kind:
        figures = parts.plots + _distribution_plots(ev, bench, kind_name, id_prefix)
        figures += _series_plots(ev, bench, kind, id_prefix) + [
            p for s, part in applying for p in s.bench_plots(ev, part, bench, id_prefix)]
    consideration = [Sentence(f.severity, f.text) for f in ev.findings.get(bench, [])]
    return BenchmarkSection(bench, kind_name, description, pre, commands, parts.results if parts else [],
                            parts.comparisons if parts else [], figures, consideration,
                            usage_tables(ev, bench) + [t for s, part in applying
                                                       for t in s.bench_tables(ev, part, bench)],
                            parts.rankings if parts else [], parts.excerpts if parts else [],
                            kind.procedure(data.benchmark_params(bench)) if kind else None)


def _distribution_plots(ev: Evaluation, bench: str, kind_name: str, id_prefix: str) -> list[Plot]:
    """Histogram and CCDF of each distribution the kind's results carry, all completed repetitions of a
    cell merged: per distribution one plot with a curve per cell, or, for kinds with many distributions
    (one per transport and message size), per cell one plot with a curve per distribution."""
    data = ev.data
    cells = data.cells(bench)
    names = list(dict.fromkeys(n for m in data.measurements(benchmark=bench, statuses=COMPLETE)
                               for n in data.result(m).distributions))
    what = section_for(kind_name).distribution_axis()
    if len(names) <= 2:
        groups = [(name, [(f"{env} / {load}", ev.merged_distribution(env, load, bench, name)) for env, load in cells])
                  for name in names]
    else:
        groups = [(f"{env} / {load}", [(name, ev.merged_distribution(env, load, bench, name)) for name in names])
                  for env, load in cells]
    out = []
    for i, (title, curves) in enumerate(groups):
        label = f"{what} ({title})" if title else what
        svg = plots.histogram_svg(curves, f"{bench}: {label} histogram (all completed repetitions merged)",
                                  f"{id_prefix}h{i}", xlabel=f"{what} (us)")
        if svg:
            out.append(Plot(f"{label[0].upper()}{label[1:]}: histogram (log count axis)", svg))
        svg = plots.ccdf_svg(curves, f"{bench}: {label} CCDF", f"{id_prefix}c{i}", xlabel=f"{what} (us)")
        if svg:
            out.append(Plot(f"{label[0].upper()}{label[1:]}: CCDF, the fraction of samples above a value (log axis)",
                            svg))
    return out


def _series_plots(ev: Evaluation, bench: str, kind, id_prefix: str) -> list[Plot]:
    """Each time series of the kind's results over the run time, one line per repetition."""
    data = ev.data
    cells = data.cells(bench)
    names = list(dict.fromkeys(n for m in data.measurements(benchmark=bench) for n in data.result(m).series))
    out = []
    for i, name in enumerate(names):
        series = []
        for env, load in cells:
            reps = []
            for m in data.measurements(env, load, bench, ("ok", "interrupted")):
                pts = data.result(m).series.get(name, [])
                reps.append(([p[0] for p in pts], [p[1] for p in pts]))
            series.append((f"{env} / {load}", reps))
        label = kind.label(name)
        svg = plots.windows_svg(series, f"{bench}: {label} per window", f"{id_prefix}w{i}",
                                f"window {label} ({suffix_unit(name)})")
        if svg:
            out.append(Plot(f"{label[0].upper()}{label[1:]} per window over time (one line per repetition, "
                            "the largest of any CPU; a last window cut short by the end of the run is left "
                            "out, its samples count in every figure)", svg))
    return out
