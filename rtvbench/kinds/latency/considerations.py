"""The consideration of a latency benchmark: results, the effect of loads and environments on the
tail, deadlines exceeded, missed periods, noisy repetitions, and the interference ranking.

Sentences quote names in backticks; the report turns them into code spans after escaping."""

from __future__ import annotations

from collections import defaultdict

from rtvbench.analysis.compare import EQUIVALENT, INSUFFICIENT, SIGNIFICANT, UNDEFINED, Comparison
from rtvbench.analysis.dataset import COMPLETE, RunData
from rtvbench.analysis.findings import INFO, NEGLIGIBLE_PERCENT, WARNING, Finding, noise
from rtvbench.analysis.stats import summarize
from rtvbench.kinds.latency.names import over_threshold_ns
from rtvbench.units import counted, format_percent, format_value, suffix_unit as unit_of, verb


def considerations(data: RunData, bench: str, kind, comps: list[Comparison]) -> list[Finding]:
    tail = _tail_figure(data, bench, kind)
    return (_results(data, bench, kind, tail) + _effects(comps, tail, kind) + _deadlines(data, bench)
            + _missed(data, bench) + noise(data, bench, kind))


def _tail_figure(data: RunData, bench: str, kind) -> str | None:
    """The deepest tail percentile every completed repetition has enough samples for."""
    counts = [kind.sample_count(m) for m in data.measurements(benchmark=bench, statuses=COMPLETE)]
    counts = [c for c in counts if c is not None]
    candidates = [f for f in kind.tail_figures if f in kind.comparison_figures]
    if not counts:
        return candidates[0] if candidates else None
    supported = [f for f in candidates if kind.samples_needed(f) <= min(counts)]
    return supported[-1] if supported else None


def _median(data: RunData, env: str, load: str, bench: str, figure: str) -> float | None:
    return summarize(data.values(env, load, bench, figure)).median


def _results(data: RunData, bench: str, kind, tail: str | None) -> list[Finding]:
    out = []
    for env, load in data.cells(bench):
        reps = data.values(env, load, bench, "max_us") if kind.is_figure("max_us") else []
        parts = []
        for figure in ("avg_us", tail):
            if figure and kind.is_figure(figure):
                v = _median(data, env, load, bench, figure)
                if v is not None:
                    parts.append(f"{kind.label(figure)} {format_value(v, unit_of(figure))}")
        if not parts:
            continue
        text = (f"In `{env}` under `{load}`, the median over "
                f"{counted(len(reps), 'repetition') if reps else 'its repetitions'} is "
                + ", ".join(parts))
        if reps:
            text += f"; the worst case over all repetitions is {format_value(max(reps), 'us')}"
        text += _response(data, env, load, bench, kind)
        out.append(Finding(INFO, "result", text + "."))
    return out


def _response(data: RunData, env: str, load: str, bench: str, kind) -> str:
    """With a work budget (latency `work_us`): the response time and the deadline misses too."""
    parts = []
    for figure in ("response_avg_us", "response_p999_us"):
        v = _median(data, env, load, bench, figure) if kind.is_figure(figure) else None
        if v is not None:
            parts.append(f"{kind.label(figure)} {format_value(v, unit_of(figure))}")
    if not parts:
        return ""
    misses = data.values(env, load, bench, "deadline_misses")
    worst = data.values(env, load, bench, "response_max_us")
    text = "; its response time (work done after each wake-up) has median " + ", ".join(parts)
    if worst:
        text += f", worst {format_value(max(worst), 'us')}"
    total = int(sum(misses))
    return text + (f", with {total:,} deadline miss{'es' if total != 1 else ''} in "
                   f"{sum(1 for v in misses if v)} of {counted(len(misses), 'repetition')}" if total
                   else ", no deadline missed")


def _change(c: Comparison, kind) -> str:
    t = c.test
    label = kind.label(c.figure)
    unit = unit_of(c.figure)
    before, after = format_value(t.baseline_median, unit), format_value(t.candidate_median, unit)
    if t.verdict == UNDEFINED:
        return f"{label} goes from {before} to {after}"
    pct = t.overhead_percent
    if pct is None:         # a side without completed repetitions (every run of it failed)
        return f"{label} cannot be compared ({before} against {after}: no completed repetition on one side)"
    if abs(pct) < NEGLIGIBLE_PERCENT:
        verb = f"stays at {after} (from {before}"
    else:
        verb = f"{'rises' if t.ratio > 1 else 'falls'} from {before} to {after} ({format_percent(pct)}"
    return f"{label} {verb}, {verdict_words(t, c.axis)})"


def verdict_words(t, axis: str) -> str:
    """The verdict of a comparison as the consideration says it: what it supports and, when it
    decides nothing, the interval, the repetitions and how many would decide."""
    if t.verdict == SIGNIFICANT:
        if axis == "load" and (t.ratio or 1) < 1:
            return "significant — and suspicious: a load should not make wake-ups faster; check the conditions"
        return "significant"
    if t.verdict == EQUIVALENT:
        return f"equivalent within ±{t.margin_percent:g} %"
    if t.verdict == INSUFFICIENT:
        return "too few repetitions to test"
    lo, hi = t.ci_percent
    words = t.needed_words()
    return (f"cannot tell: 95 % CI {format_percent(lo)} .. {format_percent(hi)} from {t.n_baseline} vs "
            f"{t.n_candidate} repetitions" + (f"; {words}" if words else ""))


def _effects(comps: list[Comparison], tail: str | None, kind) -> list[Finding]:
    out = []
    wanted = [f for f in (tail, "max_us") if f]
    groups: dict[tuple[str, str, str, str], list[Comparison]] = defaultdict(list)
    for c in comps:
        if c.figure in wanted:
            groups[(c.axis, c.context, c.baseline, c.candidate)].append(c)
    for (axis, context, baseline, candidate), cs in groups.items():
        cs.sort(key=lambda c: wanted.index(c.figure))
        changes = "; ".join(_change(c, kind) for c in cs)
        if axis == "load":
            text = f"Under load `{candidate}` (against `{baseline}`) in `{context}`, {changes}."
        else:
            text = f"In `{candidate}` compared with `{baseline}` under `{context}`, {changes}."
        out.append(Finding(INFO, axis, text))
    return out


def _deadlines(data: RunData, bench: str) -> list[Finding]:
    """Samples over each threshold the probe counted, per cell, from the `over_<T>us` figures."""
    per_threshold: dict[str, list[tuple[str, str, int, int, int]]] = defaultdict(list)
    for env, load in data.cells(bench):
        ms = data.measurements(env, load, bench, statuses=("ok", "interrupted"))
        figures = {f for m in ms for f in data.figures(m) if over_threshold_ns(f) is not None}
        for f in figures:
            counts = [int(data.figures(m).get(f, 0)) for m in ms if f in data.figures(m)]
            per_threshold[f].append((env, load, sum(counts), sum(1 for c in counts if c), len(counts)))
    out = []
    for f in sorted(per_threshold, key=over_threshold_ns):
        label = f"{over_threshold_ns(f) / 1000:g} us"
        hits = [x for x in per_threshold[f] if x[2]]
        if not hits:
            out.append(Finding(INFO, "deadline", f"No sample exceeded the {label} deadline in any run."))
            continue
        parts = [f"{counted(total, 'sample')} in `{env}` under `{load}` ({reps} of {counted(n, 'repetition')})"
                 for env, load, total, reps, n in hits]
        clean = len(per_threshold[f]) - len(hits)
        text = f"The {label} deadline was exceeded by " + ", ".join(parts)
        if clean:
            text += f"; the other {counted(clean, 'environment/load combination')} stayed below it"
        out.append(Finding(WARNING, "deadline", text + "."))
    return out


def _missed(data: RunData, bench: str) -> list[Finding]:
    out = []
    for env, load in data.cells(bench):
        missed = data.values(env, load, bench, "missed", statuses=("ok", "interrupted"))
        total = int(sum(missed))
        if total:
            out.append(Finding(WARNING, "missed",
                               f"In `{env}` under `{load}`, {counted(total, 'period')} {verb(total, 'was', 'were')} "
                               "missed entirely (a wake-up later than a whole interval) in "
                               f"{sum(1 for v in missed if v)} of {counted(len(missed), 'repetition')}."))
    return out
