"""Requirement verdicts: PASS, FAIL or INCONCLUSIVE, each with the reason in numbers.

Rules (the report and docs quote them):

Absolute bound (`metric`, optional `environments`/`loads`, `max` and/or `min`,
in the figure's own unit):
  * every selected environment x load is checked; no list means all of them;
  * a bound must hold in every repetition, so a `max` is judged on the worst
    (largest) repetition and a `min` on the smallest — a requirement on a
    latency is a promise about the worst run, not the typical one;
  * FAIL as soon as one repetition violates a bound, even an interrupted one
    (its samples happened; more samples cannot undo a violation);
  * INCONCLUSIVE, unless failed, when a selected cell has no completed
    measurement, when any repetition did not complete (error, interrupted,
    still running: the missing samples could violate the bound), when the
    figure is missing, or when a repetition has too few samples for the
    figure (a percentile p needs at least 1 / (1 - p) samples, e.g. 100 000
    for p99.999, or it is only the sample maximum); such an unsupported
    value is neither a PASS nor a FAIL;
  * PASS otherwise.

Relative bound (`overhead`, `baseline`, `candidate`, optional `loads`,
`max_percent`): per load, overhead = median(candidate) / median(baseline) - 1
over the repetitions, with its bootstrap 95 % interval;
  * PASS when the whole interval is at or below max_percent,
  * FAIL when the whole interval is above it,
  * INCONCLUSIVE when it straddles the bound, or with fewer than 3
    repetitions per side, or when the baseline median is 0.
Over several loads (or cells) the verdict is the worst: FAIL, then
INCONCLUSIVE, then PASS.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rtvbench.analysis.compare import INSUFFICIENT, UNDEFINED, RatioTest, compare_cells
from rtvbench.analysis.conditions import cell_conditions, measurement_conditions
from rtvbench.analysis.dataset import RunData
from rtvbench.analysis.kind import split_cpu
from rtvbench.analysis.metrics import resolve_metric
from rtvbench.analysis.tail import covered
from rtvbench.units import counted, format_percent, verb

PASS, FAIL, INCONCLUSIVE = "PASS", "FAIL", "INCONCLUSIVE"
_SEVERITY = {PASS: 0, INCONCLUSIVE: 1, FAIL: 2}


@dataclass
class CellVerdict:
    """What one cell a requirement covers says: an environment (or "candidate vs baseline" for an
    overhead) under a load."""
    environment: str
    load: str
    status: str
    text: str


@dataclass
class Verdict:
    status: str                      # PASS | FAIL | INCONCLUSIVE
    reason: str                      # one or more sentences with the numbers behind the status
    requirement: dict[str, Any]      # the requirement table as written in the campaign
    title: str = ""                  # the requirement in one line, e.g. "wakeup.max_us <= 100 (guest; stress)"
    details: list[str] = field(default_factory=list)   # one line per environment x load checked
    cells: list[CellVerdict] = field(default_factory=list)   # the same, as data


def evaluate_one(data: RunData, req: Any) -> Verdict:
    if not isinstance(req, dict):
        return Verdict(INCONCLUSIVE, "The requirement is not a table.", {"value": req}, str(req))
    if "overhead" in req:
        return _relative(data, req)
    if "metric" in req:
        return _absolute(data, req)
    return Verdict(INCONCLUSIVE, "The requirement names neither a `metric` nor an `overhead`.", req, "?")


def worst(statuses: list[str]) -> str:
    """FAIL over INCONCLUSIVE over PASS; INCONCLUSIVE for none."""
    return max(statuses, key=_SEVERITY.__getitem__) if statuses else INCONCLUSIVE


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _names(value: Any, default: list[str]) -> list[str]:
    if isinstance(value, list) and value:
        return [str(v) for v in value]
    return list(default)


def _resolve(data: RunData, metric: Any) -> tuple[str, str, Any, str | None]:
    """(benchmark, figure, kind, problem) for a metric name; problem says why it cannot be evaluated."""
    try:
        bench, figure = resolve_metric(str(metric), data.benchmarks)
    except ValueError:
        return "", "", None, f"`{metric}` is not of the form <benchmark>.<figure>."
    if bench not in data.benchmarks:
        return bench, figure, None, f"There is no benchmark `{bench}` in this campaign run."
    kind = data.kind(bench)
    if kind is None:
        return bench, figure, None, f"Benchmark `{bench}` has kind `{data.kind_name(bench)}`, which rtvbench cannot analyse."
    if not kind.knows(figure):
        return bench, figure, kind, f"`{figure}` is not a figure of the {kind.name} benchmark `{bench}`."
    return bench, figure, kind, None


def _samples(data: RunData, m, figure: str) -> int | None:
    """The samples a figure of one measurement rests on: its CPU's for a per-CPU figure."""
    cpu = split_cpu(figure)[0]
    result = data.result(m)
    return result.samples if cpu is None else result.cpu_samples.get(cpu)


def _absolute(data: RunData, req: dict[str, Any]) -> Verdict:
    metric = req.get("metric")
    hi, lo = _number(req.get("max")), _number(req.get("min"))
    bounds = " and ".join(x for x in [f">= {lo:g}" if lo is not None else "",
                                      f"<= {hi:g}" if hi is not None else ""] if x)
    envs = _names(req.get("environments"), data.environments)
    loads = _names(req.get("loads"), data.loads)
    title = f"{metric} {bounds or '(no bound)'} ({', '.join(envs) or '-'}; {', '.join(loads) or '-'})"
    bench, figure, kind, problem = _resolve(data, metric)
    if problem:
        return Verdict(INCONCLUSIVE, problem, req, title)
    if hi is None and lo is None:
        return Verdict(INCONCLUSIVE, "The requirement has neither `max` nor `min`.", req, title)
    base = split_cpu(figure)[1]
    unit = kind.unit(base)
    needed = kind.samples_needed(base)

    statuses, details, failures, problems, cells = [], [], [], [], []
    checked = []          # (value, env, load, repetition) of complete, supported repetitions
    samples = 0           # the samples of the checked repetitions, for what a bound on a maximum covers
    for env in envs:
        for load in loads:
            where = f"`{env}` under `{load}`"
            ms = data.measurements(env, load, bench)
            if not ms:
                problems.append(f"there is no measurement in {where}")
                details.append(f"{where}: no measurement")
                cells.append(CellVerdict(env, load, INCONCLUSIVE, "no measurement"))
                statuses.append(INCONCLUSIVE)
                continue
            cell_status = PASS
            incomplete, without, too_few, unclean = [], [], [], []
            for m in ms:
                value = data.figures(m).get(figure)
                count = _samples(data, m, figure)
                if m.status not in ("ok", "interrupted") or value is None:
                    (without if m.status == "ok" else incomplete).append(m)
                    cell_status = worst([cell_status, INCONCLUSIVE])
                    continue
                if count is not None and count < needed:
                    too_few.append(count)
                    cell_status = worst([cell_status, INCONCLUSIVE])
                    continue
                conditions = measurement_conditions(data, m)
                if conditions is not None and not conditions.ok:
                    # Measured while something else had the CPUs: neither a pass nor a failure of the platform.
                    unclean.append(conditions)
                    cell_status = worst([cell_status, INCONCLUSIVE])
                    continue
                violated = (hi is not None and value > hi) or (lo is not None and value < lo)
                if violated:
                    failures.append((value, env, load, m.repetition))
                    cell_status = FAIL
                elif m.status != "ok":
                    incomplete.append(m)
                    cell_status = worst([cell_status, INCONCLUSIVE])
                else:
                    checked.append((value, env, load, m.repetition))
                    samples += count or 0
            notes = [f"repetition {m.repetition + 1} {_status_words(m.status)}" for m in incomplete]
            if without:
                notes.append(f"{len(without)} repetition(s) report no {figure}")
            if too_few:
                notes.append(f"{len(too_few)} repetition(s) have fewer samples ({min(too_few):,}"
                             f"{'' if min(too_few) == max(too_few) else f' .. {max(too_few):,}'}) than the "
                             f"{needed:,} that {figure} needs")
            if unclean:
                notes.append(f"conditions not met in {len(unclean)} repetition(s): {unclean[0].reason}")
            cell_values = [v for v in (data.figures(m).get(figure) for m in ms) if v is not None]
            span = (f"{_fmt(kind, min(cell_values), figure)} .. {_fmt(kind, max(cell_values), figure)}"
                    if cell_values else "no values")
            text = f"{len(ms)} repetition(s), {figure} {span}" + (f" ({'; '.join(notes)})" if notes else "")
            details.append(f"{where}: {cell_status}, {text}")
            cells.append(CellVerdict(env, load, cell_status, text))
            problems.extend(f"in {where} {n}" for n in notes)
            statuses.append(cell_status)

    if not statuses:
        return Verdict(INCONCLUSIVE, "No environment and load selected.", req, title)
    status = worst(statuses)
    if status == FAIL:
        value, env, load, rep = max(failures, key=lambda f: f[0]) if hi is not None and any(
            f[0] > hi for f in failures) else min(failures, key=lambda f: f[0])
        bound = f"max {_fmt(kind, hi, figure)}" if hi is not None and value > hi else f"min {_fmt(kind, lo, figure)}"
        reason = (f"{len(failures)} repetition(s) violate the bound; the worst, {figure} = "
                  f"{_fmt(kind, value, figure)} in `{env}` under `{load}` (repetition {rep + 1}), "
                  f"is outside {bound}.")
    elif status == INCONCLUSIVE:
        reason = "Cannot decide: " + "; ".join(problems) + "."
    else:
        reason = (("The one repetition holds" if len(checked) == 1 else f"All {len(checked)} repetitions hold")
                  + f" the bound: {figure} ranges "
                  f"{_fmt(kind, min(c[0] for c in checked), figure)} .. "
                  f"{_fmt(kind, max(c[0] for c in checked), figure)} (bound {bounds}"
                  f"{'' if unit == 'count' else ' ' + unit}).")
        if kind.is_extreme(base) and samples:
            reason += (f" The bound held for the {counted(samples, 'sample')} measured: {covered(samples)} "
                       "(the tail estimate in the report extrapolates beyond them).")
    return Verdict(status, reason, req, title, details, cells)


def _fmt(kind, value, figure: str) -> str:
    return kind.format(value, split_cpu(figure)[1])


def _status_words(status: str) -> str:
    return {"error": "failed", "interrupted": "was interrupted", "running": "did not finish"}.get(
        status, f"has status {status}")


def _relative(data: RunData, req: dict[str, Any]) -> Verdict:
    metric = req.get("overhead")
    base, cand = req.get("baseline"), req.get("candidate")
    limit = _number(req.get("max_percent"))
    loads = _names(req.get("loads"), data.loads)
    title = (f"overhead of {metric}: {cand} vs {base} <= "
             f"{f'{limit:g} %' if limit is not None else '(no bound)'} ({', '.join(loads) or '-'})")
    bench, figure, kind, problem = _resolve(data, metric)
    if problem:
        return Verdict(INCONCLUSIVE, problem, req, title)
    for role, env in (("baseline", base), ("candidate", cand)):
        if env not in data.environments:
            return Verdict(INCONCLUSIVE, f"The {role} environment `{env}` has no data in this run.", req, title)
    if limit is None:
        return Verdict(INCONCLUSIVE, "The requirement has no `max_percent`.", req, title)

    statuses, details, sentences, cells = [], [], [], []
    for load in loads:
        t = compare_cells(data, bench, figure, (base, load), (cand, load))
        head = f"under `{load}`"
        unclean = [c for c in (cell_conditions(data, env, load, bench) for env in (base, cand)) if not c.ok]
        if unclean:
            # Measured while something else had the CPUs: the overhead would be that work's as much as
            # the platform's.
            status = INCONCLUSIVE
            text = f"{head} " + "; ".join(c.reason() for c in unclean)
        else:
            status, why = overhead_status(t, limit, figure)
            if t.verdict in (INSUFFICIENT, UNDEFINED):
                text = f"{head} {why}"
            else:
                ci_lo, ci_hi = t.ci_percent
                text = (f"{head} overhead {format_percent(t.overhead_percent)} (95 % CI {format_percent(ci_lo)} "
                        f".. {format_percent(ci_hi)}; median {_fmt(kind, t.baseline_median, figure)} -> "
                        f"{_fmt(kind, t.candidate_median, figure)}): {why}")
        statuses.append(status)
        sentences.append(text)
        details.append(f"{status}: {text}")
        cells.append(CellVerdict(f"{cand} vs {base}", load, status, text))
    status = worst(statuses)
    reason = "; ".join(s[0].upper() + s[1:] for s in sentences) + "." if sentences else "No load selected."
    return Verdict(status, reason, req, title, details, cells)


def overhead_status(t: RatioTest, limit: float, figure: str) -> tuple[str, str]:
    """An overhead's verdict against a `max_percent` bound, and why in words (without the medians):
    the rule of a relative requirement, also used between runs."""
    if t.verdict == INSUFFICIENT:
        text = (f"only {t.n_baseline} baseline and {counted(t.n_candidate, 'candidate repetition')} "
                f"{verb(t.n_candidate, 'has', 'have')} {figure}; at "
                "least 3 per side are needed for an interval")
        if t.overhead_percent is not None:
            text += f" (point estimate {format_percent(t.overhead_percent)})"
        return INCONCLUSIVE, text
    if t.verdict == UNDEFINED:
        return INCONCLUSIVE, f"the baseline median of {figure} is 0, so an overhead in percent does not exist"
    ci_lo, ci_hi = t.ci_percent
    if ci_hi <= limit:
        return PASS, f"the interval lies entirely within the {limit:g} % bound"
    if ci_lo > limit:
        return FAIL, f"the interval lies entirely above the {limit:g} % bound"
    return INCONCLUSIVE, f"the interval straddles the {limit:g} % bound"
