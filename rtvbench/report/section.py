"""What a benchmark kind adds to the report, and the registry of kinds' sections.

The assembler (report.model) writes the parts every benchmark has — description, preconditions,
how to measure, the consideration, load and CPU usage, the distributions and time series of its
typed results, the run analyses' tables and plots (rtvbench/run_analyses) — and asks the kind's
section for the rest:
its result and comparison tables and plots, its columns in the key results, tables of the whole run
(the response-time matrix) and its keys in the JSON report. A kind without a section of its own
(rtvbench/kinds/<kind>/section.py) gets the measurement-suite tables of report.suite.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rtvbench.analysis.evaluation import Evaluation
from rtvbench.analysis.kind import Kind
from rtvbench.kinds import load
from rtvbench.report import suite
from rtvbench.report.tables import Excerpt, Plot, Table


@dataclass
class Parts:
    results: list[Table] = field(default_factory=list)       # per repetition, per CPU, per size ...
    comparisons: list[Table] = field(default_factory=list)   # environments and loads against their baselines
    plots: list[Plot] = field(default_factory=list)
    rankings: list[Table] = field(default_factory=list)      # aggressors by the victim's degradation
    excerpts: list[Excerpt] = field(default_factory=list)    # folded preformatted texts (trace excerpts)


class Section:
    """The generic section: the measurement-suite tables (average (min, max), overheads)."""

    kind = ""

    def parts(self, ev: Evaluation, bench: str, kind: Kind, with_plots: bool, id_prefix: str) -> Parts:
        tables, comparisons, plots = suite.parts(ev, bench, kind, with_plots, id_prefix)
        return Parts(tables, comparisons, plots)

    def key_columns(self, ev: Evaluation, bench: str, kind: Kind, env: str, load: str) -> list[tuple[str, str]]:
        """The cell's (column, value) pairs in its kind's key results table (empty: nothing to say)."""
        return suite.key_columns(ev, bench, kind, env, load)

    def key_caption(self) -> str:
        """What the key results table of this kind's benchmarks shows."""
        return "medians over the repetitions"

    def run_tables(self, ev: Evaluation, benches: list[str]) -> list[Table]:
        """Tables over the benchmarks of this kind in the whole run, shown in the summary."""
        return []

    def json(self, ev: Evaluation, benches: list[str]) -> dict[str, Any]:
        """Keys this kind adds to the JSON report, over its benchmarks in the run."""
        return {}

    def distribution_axis(self) -> str:
        """What a value of the kind's distributions is, for plot axes."""
        return "value"


_SECTIONS: dict[str, Section] = {}
_GENERIC = Section()


def register(section: Section) -> Section:
    _SECTIONS[section.kind] = section
    return section


def section_for(kind_name: str | None) -> Section:
    load("section")
    return _SECTIONS.get(kind_name or "", _GENERIC)
