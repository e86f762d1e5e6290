"""Freedom from interference (a periodic victim beside aggressors, ranked) and the response-time
matrix (period x CPU load x memory load).

* Ranking of aggressors: for a periodic victim (a latency benchmark, ideally with a work
  budget) measured under several loads, each load's effect on the victim's tail against the
  baseline load — the ratio of the medians over repetitions of its p99.9 response time (p99.9
  wake-up latency without a work budget), with the comparison machinery's interval and
  verdict — and the deadline misses it caused. Worst first: by that ratio, then by misses. The
  baseline load is a row of its own (ratio 1 by definition); a load is harmless only when it is
  equivalent to it and caused no more misses, not because it ranks below it.
* The response-time matrix (period x CPU load x memory load): per (environment, benchmark = period, load = CPU x memory load) the average,
  maximum and standard deviation of all samples of all completed repetitions, and the deadline
  misses counted over them.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from rtvbench.analysis.compare import EQUIVALENT, SIGNIFICANT, UNDEFINED, RatioTest, compare_cells
from rtvbench.analysis.dataset import RunData
from rtvbench.analysis.findings import INFO, WARNING, Finding
from rtvbench.kinds.latency.names import RESPONSE
from rtvbench.kinds.latency.pooled import Pooled, misses_figure, pool

#: the tail a ranking compares, with a work budget and without
RESPONSE_TAIL, WAKEUP_TAIL = "response_p999_us", "p999_us"


@dataclass
class AggressorRow:
    load: str
    is_baseline: bool
    median: float | None                 # the victim's tail figure under this load, median of repetitions
    test: RatioTest | None               # against the baseline load; None for the baseline row
    misses: int                          # deadline misses (or missed periods) summed over repetitions
    misses_per_repetition: list[int] = field(default_factory=list)

    @property
    def ratio(self) -> float | None:
        return 1.0 if self.is_baseline else (self.test.ratio if self.test else None)

    def sort_key(self) -> tuple[float, int]:
        """Worst first: the largest ratio (an undefined one, from a baseline of zero, is
        worst of all), then the most misses; rows without data last."""
        r = self.ratio
        if r is None:
            r = math.inf if self.test is not None and self.test.verdict == UNDEFINED else -math.inf
        return (-r, -self.misses)


@dataclass
class Ranking:
    benchmark: str
    environment: str
    baseline_load: str
    figure: str                          # RESPONSE_TAIL or WAKEUP_TAIL
    misses_figure: str                   # "deadline_misses" or "missed"
    rows: list[AggressorRow]             # worst first


def rankings(data: RunData, bench: str) -> list[Ranking]:
    """One ranking per environment the benchmark was measured in under at least two loads besides
    the baseline load."""
    out: list[Ranking] = []
    base = data.baseline_load
    if base is None:
        return out
    present = data.figure_names(bench)
    figure = RESPONSE_TAIL if RESPONSE_TAIL in present else WAKEUP_TAIL
    misses_name = misses_figure(present)
    for env in data.environments:
        loads = [ld for e, ld in data.cells(bench) if e == env]
        if base not in loads or len(loads) - 1 < 2:
            continue
        rows = []
        for load in loads:
            misses = [int(v) for v in data.values(env, load, bench, misses_name)]
            values = data.values(env, load, bench, figure)
            median = statistics.median(values) if values else None
            test = None if load == base else compare_cells(data, bench, figure, (env, base), (env, load))
            rows.append(AggressorRow(load, load == base, median, test, sum(misses), misses))
        rows.sort(key=AggressorRow.sort_key)
        out.append(Ranking(bench, env, base, figure, misses_name, rows))
    return out


@dataclass
class MatrixRow:
    environment: str
    benchmark: str
    load: str
    interval_ns: int | None
    work_ns: int | None
    response: bool                       # figures are response times (work budget), else wake-up latency
    cell: Pooled                         # every sample of the completed repetitions
    misses_figure: str


def response_matrix(data: RunData, bench: str) -> list[MatrixRow]:
    """The response-time table's rows of one benchmark: one per environment and load, its response
    times with a work budget, else its wake-up latencies."""
    from rtvbench.kinds.latency import keys     # here: `show` decodes without the parameter models (pydantic)

    spec = data.benchmark(bench)
    params = keys.of(spec.params if spec else None)
    interval = params.interval_us if params else None
    work = params.work_us if params else None
    response = RESPONSE + "count" in data.figure_names(bench)
    out = []
    for env, load in data.cells(bench):
        cell = pool(data, env, load, bench, response)
        if cell.repetitions:
            out.append(MatrixRow(env, bench, load, interval * 1000 if interval else None,
                                 work * 1000 if work else None, response, cell,
                                 misses_figure(data.figure_names(bench))))
    return out


def _times(ratio: float | None) -> str:
    return "n/a" if ratio is None else f"x{ratio:.3g}"


def _names(rows) -> str:
    return ", ".join(f"`{r.load}`" for r in rows)


def ranking_findings(ranked: list[Ranking], label) -> list[Finding]:
    """The consideration's sentences on each ranking: the worst aggressor; which loads are shown
    harmless (equivalent to the baseline within the margin, no more misses); which cannot be told
    apart from it either way; and a significant improvement under load, which is suspicious.
    `label` names a figure in words."""
    out: list[Finding] = []
    for rk in ranked:
        aggressors = [r for r in rk.rows if not r.is_baseline]
        base = next(r for r in rk.rows if r.is_baseline)
        misses_word = "deadline misses" if rk.misses_figure == "deadline_misses" else "missed periods"
        what = label(rk.figure)
        slower = [r for r in aggressors if r.test and r.test.verdict == SIGNIFICANT and (r.ratio or 0) > 1]
        missing = [r for r in aggressors if r not in slower and r.misses > base.misses]
        harmful = slower + missing
        faster = [r for r in aggressors if r.test and r.test.verdict == SIGNIFICANT and (r.ratio or 0) < 1]
        harmless = [r for r in aggressors if r.test and r.test.verdict == EQUIVALENT and r not in harmful]
        unknown = [r for r in aggressors if r not in harmful + faster + harmless]
        margin = next((r.test.margin_percent for r in aggressors if r.test), None)
        parts = []
        if slower:
            worst = slower[0]
            ci = (f", 95 % CI {_times(worst.test.ci_low)} .. {_times(worst.test.ci_high)}"
                  if worst.test.ci_low is not None else "")
            parts.append(f"`{worst.load}` interferes most: the {what} goes {_times(worst.ratio)} against "
                         f"`{rk.baseline_load}`{ci} (significant), with {worst.misses:,} {misses_word} against "
                         f"{base.misses:,}. {len(slower)} of {len(aggressors)} degrade it significantly")
        if missing:
            parts.append(f"more {misses_word} than under `{rk.baseline_load}` ({base.misses:,}) with "
                         + ", ".join(f"`{r.load}` ({r.misses:,})" for r in missing))
        if harmless:
            parts.append(f"no measurable harm from {_names(harmless)} (equivalent within ±{margin:g} %)")
        if unknown:
            parts.append(f"cannot tell for {_names(unknown)}: "
                         + "; ".join(_undecided(r) for r in unknown))
        head = f"Of the {len(aggressors)} loads that ran beside `{rk.benchmark}` in `{rk.environment}`, "
        if not harmful and not unknown and not faster:
            out.append(Finding(INFO, "interference",
                               head + f"none changed its {what} by more than ±{margin:g} % against "
                               f"`{rk.baseline_load}` nor caused more {misses_word}: freedom from interference is "
                               "shown at this margin."))
        elif parts:
            if not slower:
                parts.insert(0, f"none raised its {what} significantly above `{rk.baseline_load}`")
            out.append(Finding(WARNING if harmful or unknown else INFO, "interference",
                               head + "; ".join(parts) + "."))
        if faster:
            out.append(Finding(WARNING, "interference", _suspicious(rk, faster, what)))
    return out


def _undecided(r) -> str:
    t = r.test
    if t is None or t.ci_low is None:
        return f"`{r.load}` has too few repetitions"
    words = t.needed_words()
    return (f"`{r.load}` {_times(r.ratio)}, 95 % CI {_times(t.ci_low)} .. {_times(t.ci_high)} from "
            f"{t.n_baseline} vs {t.n_candidate} repetitions" + (f" ({words})" if words else ""))


def _suspicious(rk: Ranking, faster: list, what: str) -> str:
    loads = ", ".join(f"`{r.load}` ({_times(r.ratio)})" for r in faster)
    return (f"Under {loads} the {what} of `{rk.benchmark}` in `{rk.environment}` is significantly *lower* than "
            f"under `{rk.baseline_load}`: a load should not make wake-ups faster. Likely causes: the load keeps "
            "the CPUs out of deep idle states and at a higher clock (a baseline without "
            "/dev/cpu_dma_latency or with frequency scaling pays exit and ramp-up latency), or the baseline "
            "was disturbed by something outside the campaign. Check the measurement conditions before "
            "reading this as an improvement.")
