"""Everything the analysis says about one campaign run, computed once for all report formats.

Every report format (HTML, Markdown, JSON, CSV, JUnit, PDF) renders this object and computes nothing
itself, so that no two formats can disagree: what surrounded each measurement (the loads it ran
under, CPU usage, conditions), the same averaged per cell, the fingerprints side by side, the
preflight warnings, and the part of each run analysis (rtvbench/run_analyses: thermal state, the
guests' cost to the host, a neighbour's restarts, figures against the number of VMs, a soak's
verdict) are all parts of it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, TypeVar

from rtvbench.analysis.across_runs import AcrossRuns
from rtvbench.analysis.compare import Comparison, comparisons
from rtvbench.analysis.conditions import CellConditions, Conditions, cell_conditions, measurement_conditions
from rtvbench.analysis.cpu_usage import BusyDifference, CpuUsage, busy_difference, cell_usage, measurement_usage
from rtvbench.analysis.dataset import COMPLETE, RunData
from rtvbench.analysis.findings import WARNING, Finding, considerations
from rtvbench.analysis.fingerprint import FingerprintDiff, fingerprint_diff
from rtvbench.analysis.histogram import Histogram, merge_all
from rtvbench.analysis.no_value import left_out, no_value_reason
from rtvbench.analysis.load_achieved import Achieved, cell_achieved, load_order, mean_achieved, measurement_achieved
from rtvbench.analysis.requirements import Verdict, evaluate_one
from rtvbench.analysis.run_analysis import RunAnalysis, run_analyses
from rtvbench.analysis.stats import CellSummary, summaries
from rtvbench.preflight import PreflightWarning, asks_rt_priority, check as preflight_check, observed_privileges
from rtvbench.results import CampaignRun, Measurement
from rtvbench.units import counted

P = TypeVar("P")


@dataclass(frozen=True)
class Surroundings:
    """What one measurement ran under and beside, apart from its own figures."""
    loads_achieved: list[Achieved]          # each probe load's figures of itself, in the load's order
    cpu_usage: list[CpuUsage]               # /proc/stat around the probe: all CPUs, then each
    conditions: Conditions | None           # whether the measured CPUs belonged to the measurement
    #: all CPUs' busy % against the same load's cell in the baseline environment (None in that one)
    busy_vs_baseline: BusyDifference | None = None


@dataclass(frozen=True)
class CellSurroundings:
    """The same over a cell's completed repetitions (means, or medians for the host's usage)."""
    loads_achieved: list[Achieved]
    cpu_usage: list[CpuUsage]
    conditions: CellConditions
    #: whether its measurements were granted the real-time policy they asked for: False when any was
    #: refused, None when none asked (a normal-priority benchmark)
    rt_granted: bool | None = None
    #: all CPUs' mean busy % against the same load's cell in the baseline environment (None in that one)
    busy_vs_baseline: BusyDifference | None = None


@dataclass(frozen=True)
class RunParts:
    """The parts of the evaluation that concern the whole run rather than one benchmark's figures."""
    #: per load, what its probe loads achieved over all its completed measurements
    loads_achieved: dict[str, list[Achieved]]
    #: every environment's fingerprint side by side; None when none was recorded
    fingerprints: FingerprintDiff | None
    #: the preflight check again, with what the measurements said of real-time priority and mlockall
    preflight: list[PreflightWarning]


@dataclass
class Evaluation:
    data: RunData
    summaries: list[CellSummary]
    comparisons: list[Comparison]
    verdicts: list[Verdict]
    findings: dict[str, list[Finding]]
    #: each benchmark's analyses beyond figures and comparisons, in its kind's own type (Kind.analyse;
    #: None for a kind with none), which only that kind's section reads
    extras: dict[str, Any]
    #: measurement id -> what it ran under (every measurement of the run, failed ones included)
    surroundings: dict[int, Surroundings]
    #: (environment, load, benchmark) -> the same over the cell's completed repetitions
    cells: dict[tuple[str, str, str], CellSurroundings]
    run_parts: RunParts
    #: each run analysis's part by its name (None: it does not apply to this run); read with part()
    parts: dict[str, Any]
    #: this run against an earlier one (`report --baseline`)
    across: AcrossRuns | None = None

    def part(self, analysis: RunAnalysis[P]) -> P | None:
        return self.parts.get(analysis.name)

    def around(self, m: Measurement) -> Surroundings:
        return self.surroundings[m.id]

    def cell(self, env: str, load: str, bench: str) -> CellSurroundings:
        return self.cells[(env, load, bench)]

    def unclean(self, env: str, load: str, bench: str) -> CellConditions | None:
        """The cell's conditions when some repetition did not meet them, else None."""
        cell = self.cells.get((env, load, bench))
        return cell.conditions if cell is not None and not cell.conditions.ok else None

    def summary(self, env: str, load: str, bench: str, figure: str):
        # Indexed on first use: the measurement-suite tables look up thousands of cells.
        index = self.__dict__.get("_summary_index")
        if index is None:
            index = {(s.environment, s.load, s.benchmark, s.figure): s.summary for s in self.summaries}
            self.__dict__["_summary_index"] = index
        return index.get((env, load, bench, figure))

    def no_value(self, env: str, load: str, bench: str, figure: str) -> str:
        """Why a cell has no value of a figure (analysis.no_value), for the cell a table leaves empty."""
        memo = self.__dict__.setdefault("_no_value", {})
        key = (env, load, bench, figure)
        if key not in memo:
            memo[key] = no_value_reason(self.data, env, load, bench, figure)
        return memo[key]

    def left_out(self, env: str, load: str, bench: str, figure: str) -> tuple[int, str] | None:
        """How many repetitions of a cell had the figure as no measurement, left out of its summary,
        and why (analysis.no_value.left_out)."""
        memo = self.__dict__.setdefault("_left_out", {})
        key = (env, load, bench, figure)
        if key not in memo:
            memo[key] = left_out(self.data, env, load, bench, figure)
        return memo[key]

    def merged_distribution(self, env: str, load: str, bench: str, name: str,
                            cpu: int | None = None) -> Histogram | None:
        """One distribution of a cell (a CPU's main one when `cpu` is given), all completed
        repetitions merged."""
        hists = []
        for m in self.data.measurements(env, load, bench, COMPLETE):
            r = self.data.result(m)
            h = r.distributions.get(name) if cpu is None else r.cpu_distributions.get(cpu)
            if h is not None:
                hists.append(h)
        return merge_all(hists) if hists else None


def evaluate_run(run: CampaignRun) -> Evaluation:
    data = RunData(run)
    comps = comparisons(data)
    verdicts = [evaluate_one(data, r) for r in data.requirements]
    extras = {}
    for bench in data.benchmarks:
        kind = data.kind(bench)
        extras[bench] = kind.analyse(data, bench) if kind is not None else None
    conditions = {(env, load, bench): cell_conditions(data, env, load, bench)
                  for bench in data.benchmarks for env, load in data.cells(bench)}
    findings = considerations(data, comps, extras)
    for (env, load, bench), c in conditions.items():
        if not c.ok:
            findings.setdefault(bench, []).insert(0, Finding(
                WARNING, "conditions",
                f"Measurement conditions: {c.reason()}. Its figures are marked, and requirements on them "
                "are INCONCLUSIVE: they describe the machine's other work as much as the platform."))
    cell_parts = {(env, load, bench): _cell_surroundings(data, env, load, bench, c)
                  for (env, load, bench), c in conditions.items()}
    cell_parts = {key: replace(cell, busy_vs_baseline=_against_baseline(data, cell_parts, key, cell.cpu_usage))
                  for key, cell in cell_parts.items()}
    around = {}
    for m in data.run.measurements:
        s = _surroundings(data, m)
        around[m.id] = replace(s, busy_vs_baseline=_against_baseline(
            data, cell_parts, (m.environment, m.load, m.benchmark), s.cpu_usage))
    return Evaluation(data, summaries(data), comps, verdicts, findings, extras, around, cell_parts,
                      _run_parts(data), {a.name: a.compute(data, around) for a in run_analyses()})


def _against_baseline(data: RunData, cells: dict, key: tuple[str, str, str], usage) -> BusyDifference | None:
    """CPU busy against the same load's cell in the baseline environment, for a cell or a measurement
    of another environment."""
    env, load, bench = key
    base = data.baseline_environment
    if base is None or env == base or (base, load, bench) not in cells:
        return None
    return busy_difference(usage, base, cells[(base, load, bench)].cpu_usage)


def _surroundings(data: RunData, m: Measurement) -> Surroundings:
    return Surroundings(measurement_achieved(m, load_order(data, m.load)), measurement_usage(m),
                        measurement_conditions(data, m))


def _cell_surroundings(data: RunData, env: str, load: str, bench: str, conditions: CellConditions
                       ) -> CellSurroundings:
    asked = [] if asks_rt_priority(data.run.spec, bench) is False else \
        [m.privileges.rt_granted for m in data.measurements(env, load, bench)]
    asked = [granted for granted in asked if granted is not None]
    return CellSurroundings(cell_achieved(data, env, load, bench), cell_usage(data, env, load, bench),
                            conditions,
                            all(asked) if asked else None)


def _run_parts(data: RunData) -> RunParts:
    run = data.run
    observed = observed_privileges(run.measurements, run.spec)
    granted = {env: ((f"real-time priority granted in all {o.rt_requested} measurements" if o.rt_requested != 1
                      else "real-time priority granted in the one measurement") if not o.rt_refused
                     else f"real-time priority refused in {o.rt_refused} of {counted(o.rt_requested, 'measurement')}")
               for env, o in observed.items() if o.rt_requested}
    prints = {env: (run.targets.get(env) or {}, run.fingerprints.get(env) or {}, run.fingerprint_meta.get(env) or {})
              for env in run.fingerprints or {}}
    return RunParts(
        loads_achieved={ld: mean_achieved([measurement_achieved(m, load_order(data, ld))
                                           for m in data.measurements(load=ld, statuses=COMPLETE)])
                        for ld in data.loads},
        fingerprints=fingerprint_diff(data.environments, run.fingerprints or {}, run.targets,
                                      run.fingerprint_meta, granted),
        preflight=preflight_check(run.spec, prints, observed))
