"""Everything the analysis says about one campaign run, computed once for all report formats."""

from __future__ import annotations

from dataclasses import dataclass, field

from rtvbench.analysis.compare import Comparison, comparisons
from rtvbench.analysis.dataset import COMPLETE, RunData
from rtvbench.analysis.findings import Finding, considerations
from rtvbench.analysis.histogram import Histogram, merge_all
from rtvbench.analysis.interference import MatrixRow, Ranking, ranking_findings, rankings, response_matrix
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
    rankings: list[Ranking] = field(default_factory=list)       # aggressors by the victim's degradation
    matrix: list[MatrixRow] = field(default_factory=list)       # the 003 response-time table

    def summary(self, env: str, load: str, bench: str, figure: str):
        # Indexed on first use: the measurement-suite tables look up thousands of cells.
        index = self.__dict__.get("_summary_index")
        if index is None:
            index = {(s.environment, s.load, s.benchmark, s.figure): s.summary for s in self.summaries}
            self.__dict__["_summary_index"] = index
        return index.get((env, load, bench, figure))

    def merged_histogram(self, env: str, load: str, bench: str) -> Histogram | None:
        """All samples of the completed repetitions of a cell in one histogram."""
        kind = self.data.kind(bench)
        if kind is None:
            return None
        hists = [kind.histogram(m) for m in self.data.measurements(env, load, bench, COMPLETE)]
        hists = [h for h in hists if h is not None]
        return merge_all(hists) if hists else None


def evaluate_run(run: CampaignRun) -> Evaluation:
    data = RunData(run)
    comps = comparisons(data)
    reqs = data.campaign.get("requirements")
    verdicts = [evaluate_one(data, r) for r in reqs] if isinstance(reqs, list) else []
    found = considerations(data, comps)
    ranked = rankings(data)
    for bench, extra in ranking_findings(ranked).items():
        found.setdefault(bench, []).extend(extra)
    return Evaluation(data, summaries(data), comps, verdicts, found, ranked, response_matrix(data))
