"""JSON export: summaries, comparisons, verdicts, findings and every measurement's figures.

Numbers stay numbers; a value that does not exist (NaN, an undefined ratio)
is null, because JSON has no NaN. Repetitions are counted from 1, as in every table
of the report and in `rtvbench show`.

Schema 2 (from schema 1): repetitions counted from 1 (were from 0); comparisons' overhead signed
so that positive is worse (a bandwidth loss is positive), with `lower_is_better` and `declared`.
"""

from __future__ import annotations

import json
import math
from typing import Any

from rtvbench.analysis.cpu_usage import BusyDifference, CpuUsage
from rtvbench.analysis.evaluation import Evaluation, Surroundings
from rtvbench.analysis.load_achieved import describe_all
from rtvbench.report.run_section import RunSection, with_parts
from rtvbench.report.section import section_for

SCHEMA = 2


def _num(x: Any) -> Any:
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return None
    return x


def _when(dt) -> str | None:
    return dt.isoformat() if dt else None


def document(ev: Evaluation) -> dict[str, Any]:
    data, run = ev.data, ev.data.run
    parts = ev.run_parts
    sections = with_parts(ev)
    return {
        "schema": SCHEMA,
        "run": {"id": run.id, "campaign": run.campaign_name, "status": run.status,
                "started_at": _when(run.started_at), "finished_at": _when(run.finished_at),
                "tags": run.tags, "note": run.note,
                # a soak's rounds (every cell once per round); null for a run of repetitions
                "rounds": data.rounds},
        "environments": data.environments,
        "loads": data.loads,
        "baseline_environment": data.baseline_environment,
        "baseline_load": data.baseline_load,
        "benchmarks": {b: {"kind": data.kind_name(b)} for b in data.benchmarks},
        "measurements": [
            {"id": m.id, "environment": m.environment, "load": m.load, "benchmark": m.benchmark,
             "kind": m.kind, "repetition": m.repetition + 1, "attempt": m.attempt, "status": m.status,
             "error": m.error, "target_log": m.target_log,
             "command": m.command, "load_commands": m.load_commands,
             "warnings": [{"code": w.get("code"), "message": w.get("message")} for w in m.warnings],
             # merged figures, and each CPU's as "cpu<N>.<figure>" (the metric names of requirements)
             "figures": {k: _num(float(v)) for k, v in data.figures(m).items()},
             **_surroundings(ev.around(m)), **_sections_of(ev, sections, m)}
            for m in data.measurements()],
        # Earlier attempts that failed and were retried (a crashed guest's console in target_log).
        "failed_attempts": [
            {"id": m.id, "environment": m.environment, "load": m.load, "benchmark": m.benchmark,
             "repetition": m.repetition + 1, "attempt": m.attempt, "error": m.error, "target_log": m.target_log}
            for m in run.failed_attempts],
        "load_cells": _load_cells(ev),
        # Per load, what its probe loads achieved over all its completed measurements (the Loads table).
        "loads_achieved": {ld: {"achieved": [_clean(a.to_dict()) for a in achieved],
                                "achieved_text": describe_all(achieved, quote=False)}
                           for ld, achieved in parts.loads_achieved.items() if achieved},
        # Every environment's fingerprint side by side: the key facts, then every other recorded field,
        # each row with its values per environment and whether they differ.
        "fingerprint": parts.fingerprints.to_dict() if parts.fingerprints else None,
        "preflight": [w.to_dict() for w in parts.preflight],
        "summaries": [
            {"environment": s.environment, "load": s.load, "benchmark": s.benchmark, "figure": s.figure,
             "unit": data.kind(s.benchmark).unit(s.figure), "n": s.summary.n, "min": _num(s.summary.min), "mean": _num(s.summary.mean),
             "median": _num(s.summary.median), "stddev": _num(s.summary.stddev), "max": _num(s.summary.max),
             "cv": _num(s.summary.cv), "percentiles": {k: _num(v) for k, v in s.summary.percentiles.items()},
             "values": [_num(v) for v in s.summary.values],
             "not_values": _not_values(ev.left_out(s.environment, s.load, s.benchmark, s.figure))}
            for s in ev.summaries],
        # A cell without a value of a figure its benchmark has elsewhere: why (the results table's "– (...)").
        "no_values": [{"environment": env, "load": load, "benchmark": bench, "figure": figure,
                       "reason": ev.no_value(env, load, bench, figure)}
                      for bench in data.benchmarks for figure in data.figure_names(bench)
                      for env, load in data.cells(bench) if ev.summary(env, load, bench, figure) is None],
        "comparisons": [_comparison(c) | {"unit": data.kind(c.benchmark).unit(c.figure)} for c in ev.comparisons],
        "verdicts": [{"status": v.status, "reason": v.reason, "title": v.title, "requirement": v.requirement,
                      "details": v.details} for v in ev.verdicts],
        "findings": {b: [{"severity": f.severity, "topic": f.topic, "text": f.text} for f in fs]
                     for b, fs in ev.findings.items()},
        "against_run": _against(ev),
    } | _kind_keys(ev) | {k: v for s, part in sections for k, v in _clean_all(s.json(ev, part)).items()}


def _surroundings(s: Surroundings) -> dict[str, Any]:
    """What a measurement ran under: its loads, CPU usage, conditions."""
    return {"loads_achieved": [_clean(a.to_dict()) for a in s.loads_achieved],
            "cpu_usage": [_usage(u) for u in s.cpu_usage],
            "busy_vs_baseline": _busy_vs(s.busy_vs_baseline),
            "conditions": None if s.conditions is None else _clean(s.conditions.to_dict())}


def _sections_of(ev: Evaluation, sections: list[tuple[RunSection, Any]], m) -> dict[str, Any]:
    """What the run analyses say of one measurement (its thermal state, the guests' cost ...)."""
    return {k: v for s, part in sections for k, v in _clean_all(s.measurement_json(ev, part, m)).items()}


def _comparison(c) -> dict[str, Any]:
    return {"benchmark": c.benchmark, "figure": c.figure, "axis": c.axis,
            "baseline": {"environment": c.baseline_environment, "load": c.baseline_load},
            "candidate": {"environment": c.candidate_environment, "load": c.candidate_load},
            "n_baseline": c.test.n_baseline, "n_candidate": c.test.n_candidate,
            "baseline_median": _num(c.test.baseline_median), "candidate_median": _num(c.test.candidate_median),
            "difference": _num(c.test.difference),
            "declared": c.declared, "lower_is_better": c.test.lower_is_better,
            "ratio": _num(c.test.ratio), "overhead_percent": _num(c.test.overhead_percent),
            "ci95_ratio": [_num(c.test.ci_low), _num(c.test.ci_high)] if c.test.ci_low is not None else None,
            "ci95_percent": [_num(x) for x in c.test.ci_percent] if c.test.ci_percent else None,
            "p_value": _num(c.test.p_value), "verdict": c.verdict, "no_data": c.no_data, "method": c.test.method,
            "p_test": c.test.p_test,
            "equivalence_percent": c.test.margin_percent,
            "ci90_ratio": ([_num(c.test.equivalence_low), _num(c.test.equivalence_high)]
                           if c.test.equivalence_low is not None else None),
            "needed_repetitions": c.test.needed_repetitions}


def _not_values(dropped: tuple[int, str] | None) -> dict[str, Any] | None:
    """Repetitions whose figure was no measurement, left out of the summary: how many and why."""
    return {"repetitions": dropped[0], "reason": dropped[1]} if dropped else None


def _against(ev: Evaluation) -> dict[str, Any] | None:
    """This run against another (`report --baseline`), as `rtvbench compare --json` prints it."""
    if ev.across is None:
        return None
    from rtvbench.report.across_runs import document as across_document
    return across_document(ev.across)


def _clean(d: dict[str, Any]) -> dict[str, Any]:
    return {k: _num(v) for k, v in d.items()}


def _usage(u: CpuUsage) -> dict[str, Any]:
    return {"cpu": u.cpu, "busy_percent": _num(u.busy), "ticks": u.ticks, "n": u.n,
            "percent": {k: _num(v) for k, v in u.percent.items()}}


def _busy_vs(d: BusyDifference | None) -> dict[str, Any] | None:
    """All CPUs' busy % against the baseline environment's under the same load, in percentage points."""
    return None if d is None else {"baseline": d.baseline, "baseline_busy_percent": _num(d.baseline_busy),
                                   "difference_points": _num(d.points)}


def _load_cells(ev: Evaluation) -> list[dict[str, Any]]:
    """Per (environment, load, benchmark): what the loads achieved and the CPU usage, averaged over the
    completed repetitions (the figures the report prints next to the results)."""
    out = []
    for bench in ev.data.benchmarks:
        for env, load in ev.data.cells(bench):
            cell = ev.cell(env, load, bench)
            achieved, usage = cell.loads_achieved, cell.cpu_usage
            if achieved or usage:
                out.append({"environment": env, "load": load, "benchmark": bench,
                            "achieved": [_clean(a.to_dict()) for a in achieved],
                            "achieved_text": describe_all(achieved, quote=False),
                            "cpu_usage": [_usage(u) for u in usage],
                            "busy_vs_baseline": _busy_vs(cell.busy_vs_baseline)})
    return out


def _kind_keys(ev: Evaluation) -> dict[str, Any]:
    """What each kind's section adds (an interference ranking, a response-time matrix, memory curves,
    workload verification ...), over the benchmarks of that kind."""
    by_kind: dict[str | None, list[str]] = {}
    for b in ev.data.benchmarks:
        by_kind.setdefault(ev.data.kind_name(b), []).append(b)
    out: dict[str, Any] = {}
    for kind, benches in by_kind.items():
        out.update(_clean_all(section_for(kind).json(ev, benches)))
    return out


def _clean_all(x: Any) -> Any:
    """NaN and infinities anywhere in a structure as null (JSON has neither)."""
    if isinstance(x, dict):
        return {k: _clean_all(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean_all(v) for v in x]
    return _num(x)


def render_json(ev: Evaluation) -> str:
    return json.dumps(document(ev), sort_keys=True, indent=2, allow_nan=False, default=str) + "\n"

