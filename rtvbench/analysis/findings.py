"""The written "Consideration" of each benchmark: what the numbers say, and what to distrust.

The kind says what its numbers mean (`Kind.considerations`); this module adds what holds for
every kind: the probe's own warnings and the measurements that failed or were cut short.

Sentences quote names in backticks; the report turns them into code spans
after escaping, so a hostile name stays text.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from rtvbench.analysis.compare import Comparison
from rtvbench.analysis.dataset import RunData
from rtvbench.analysis.stats import summarize
from rtvbench.units import counted

INFO, WARNING = "info", "warning"
#: a cell whose repetitions vary more than this (coefficient of variation) is called noisy
NOISY_CV = 0.20
#: relative changes smaller than this are not worth a sentence, whatever the test says
NEGLIGIBLE_PERCENT = 1.0


@dataclass
class Finding:
    severity: str        # "info" | "warning"
    topic: str           # "result" | "load" | "environment" | "deadline" | "missed" | "noisy" | "probe-warning" | "failure"
    text: str


def considerations(data: RunData, comps: list[Comparison],
                   extras: dict[str, Any] | None = None) -> dict[str, list[Finding]]:
    """Findings per benchmark, in the order a reader wants them: result, effects, deadlines, caveats.
    `extras`: each benchmark's Kind.analyse, when already computed, so that no analysis runs twice."""
    return {bench: _benchmark_findings(data, bench, [c for c in comps if c.benchmark == bench],
                                       (extras or {}).get(bench))
            for bench in data.benchmarks}


def _benchmark_findings(data: RunData, bench: str, comps: list[Comparison], analysed: Any) -> list[Finding]:
    kind = data.kind(bench)
    out: list[Finding] = []
    if kind is None:
        return [Finding(WARNING, "result", f"Benchmark `{bench}` has kind `{data.kind_name(bench)}`, "
                                          "which this version of rtvbench cannot analyse.")]
    out += [Finding(*f) for f in kind.considerations(data, bench, comps, analysed)]
    return out + _probe_warnings(data, bench) + _failures(data, bench)


def noise(data: RunData, bench: str, kind) -> list[Finding]:
    """A warning per cell whose repetitions disagree by more than NOISY_CV on a figure the kind says
    repetitions should agree on (`Kind.stable_figures`): the worst three named."""
    figures = kind.stable_figures(data.figure_names(bench))
    out = []
    for env, load in data.cells(bench):
        noisy = []
        for figure in figures:
            s = summarize(data.values(env, load, bench, figure))
            if s.cv is not None and s.cv > NOISY_CV:
                noisy.append((s.cv, figure))
        if not noisy:
            continue
        noisy.sort(reverse=True)
        said = ", ".join(f"{kind.label(f)} varies by {cv * 100:.0f} %" for cv, f in noisy[:3])
        if len(noisy) > 3:
            said += f", and {len(noisy) - 3} more of the {len(figures)} figures"
        out.append(Finding(WARNING, "noisy",
                           f"Repetitions in `{env}` under `{load}` are noisy ({said}; coefficient of variation, "
                           f"above {NOISY_CV * 100:.0f} %): something else disturbed the runs, so comparisons "
                           "involving them are less certain."))
    return out


def _probe_warnings(data: RunData, bench: str) -> list[Finding]:
    """One finding per distinct warning, counted per cell against that cell's measurements (a count
    over the whole benchmark would not match the per-environment counts said elsewhere)."""
    hits: dict[tuple[str, str], dict[tuple[str, str], int]] = defaultdict(lambda: defaultdict(int))
    for m in data.measurements(benchmark=bench):
        for key in dict.fromkeys((str(w.get("code") or "warning"), str(w.get("message") or "")) for w in m.warnings):
            hits[key][(m.environment, m.load)] += 1
    out = []
    for (code, message), cells in hits.items():
        where = ", ".join(f"`{env}` under `{load}` ({n} of {counted(len(data.measurements(env, load, bench)), 'measurement')})"
                          for (env, load), n in cells.items())
        text = f"The probe warned `{code}` in {where}"
        out.append(Finding(WARNING, "probe-warning", text + (f": {message}" if message else ".")))
    return out


def _failures(data: RunData, bench: str) -> list[Finding]:
    out = []
    for m in data.measurements(benchmark=bench):
        where = f"Repetition {m.repetition + 1} in `{m.environment}` under `{m.load}`"
        data.result(m)
        if m.id in data.unreadable:
            out.append(Finding(WARNING, "failure", f"{where}: its stored records could not be read "
                                                   f"({data.unreadable[m.id]}), so it has no figures."))
        if m.status == "error":
            out.append(Finding(WARNING, "failure", f"{where} failed: {m.error or 'no error message recorded'}."))
        elif m.status == "interrupted":
            out.append(Finding(WARNING, "failure", f"{where} was interrupted; its figures cover only the samples "
                                                   "before the interruption and are left out of summaries and "
                                                   "comparisons."))
        elif m.status == "running":
            out.append(Finding(WARNING, "failure", f"{where} never finished (the run stopped while it was "
                                                   "measuring); it is left out."))
    return out
