"""Everything the analysis says about one campaign run, computed once for all report formats."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rtvbench.analysis.compare import Comparison, comparisons
from rtvbench.analysis.dataset import COMPLETE, RunData
from rtvbench.analysis.conditions import CellConditions, cell_conditions
from rtvbench.analysis.findings import WARNING, Finding, considerations
from rtvbench.analysis.histogram import Histogram, merge_all
from rtvbench.analysis.requirements import Verdict, evaluate_one
from rtvbench.analysis.stats import CellSummary, summaries
from rtvbench.results import CampaignRun


@dataclass
class Evaluation:
    data: RunData
    summaries: list[CellSummary]
    comparisons: list[Comparison]
    verdicts: list[Verdict]
    findings: dict[str, list[Finding]]
    #: each benchmark's analyses beyond figures and comparisons, by name (Kind.analyse)
    extras: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: (environment, load, benchmark) -> whether the measured CPUs belonged to the measurement
    conditions: dict[tuple[str, str, str], CellConditions] = field(default_factory=dict)
    #: this run against an earlier one (`report --baseline`): an analysis.across_runs.AcrossRuns
    across: Any = None

    def unclean(self, env: str, load: str, bench: str) -> CellConditions | None:
        """The cell's conditions when some repetition did not meet them, else None."""
        c = self.conditions.get((env, load, bench))
        return c if c is not None and not c.ok else None

    def summary(self, env: str, load: str, bench: str, figure: str):
        # Indexed on first use: the measurement-suite tables look up thousands of cells.
        index = self.__dict__.get("_summary_index")
        if index is None:
            index = {(s.environment, s.load, s.benchmark, s.figure): s.summary for s in self.summaries}
            self.__dict__["_summary_index"] = index
        return index.get((env, load, bench, figure))

    def merged_histogram(self, env: str, load: str, bench: str) -> Histogram | None:
        """All samples of the completed repetitions of a cell in one histogram."""
        return self.merged_distribution(env, load, bench, "wake-up")

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
        extras[bench] = kind.analyse(data, bench) if kind is not None else {}
    cells = {(env, load, bench): cell_conditions(data, env, load, bench)
             for bench in data.benchmarks for env, load in data.cells(bench)}
    findings = considerations(data, comps, extras)
    for (env, load, bench), c in cells.items():
        if not c.ok:
            findings.setdefault(bench, []).insert(0, Finding(
                WARNING, "conditions",
                f"Measurement conditions: {c.reason()}. Its figures are marked, and requirements on them "
                "are INCONCLUSIVE: they describe the machine's other work as much as the platform."))
    return Evaluation(data, summaries(data), comps, verdicts, findings, extras, cells)
