"""The extension point of the run analyses' report sections (rtvbench/run_analyses/<name>/section.py).

A section words its analysis's part of the Evaluation for every format at once: the report model
(HTML, Markdown, PDF) takes its headline, summary tables, warnings and tables and plots in each
benchmark's section; the JSON export its keys at the top of the document and in each measurement's entry;
the CSV export its rows of each measurement.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, TypeVar

from rtvbench.analysis.evaluation import Evaluation
from rtvbench.analysis.run_analysis import RunAnalysis
from rtvbench.registry import Registry
from rtvbench.report.tables import Headline, Plot, Sentence, Table
from rtvbench.results import Measurement

P = TypeVar("P")


def _nothing(*_: Any) -> list:
    return []


def _no_keys(*_: Any) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class RunSection(Generic[P]):
    analysis: RunAnalysis[P]
    #: a sentence and tables at the top of the summary (a soak's verdict); None: nothing to headline
    headline: Callable[[Evaluation, P], Headline | None] = lambda ev, part: None
    #: tables after the kinds' tables over the whole run
    tables: Callable[[Evaluation, P], list[Table]] = _nothing
    warnings: Callable[[Evaluation, P], list[Sentence]] = _nothing
    #: tables in a benchmark's section, after its load and CPU usage tables (ev, part, benchmark)
    bench_tables: Callable[[Evaluation, P, str], list[Table]] = _nothing
    #: plots in a benchmark's section, after its kind's (ev, part, benchmark, the plots' id prefix)
    bench_plots: Callable[[Evaluation, P, str, str], list[Plot]] = _nothing
    #: the JSON document's keys for it; called with None too when the part does not apply, so that a
    #: key a reader looks for is always there
    json: Callable[[Evaluation, P | None], dict[str, Any]] = _no_keys
    #: keys of one measurement's JSON entry, likewise called with None
    measurement_json: Callable[[Evaluation, P | None, Measurement], dict[str, Any]] = _no_keys
    #: rows of one measurement in the CSV export, (figure, value, unit), likewise called with None
    csv_rows: Callable[[Evaluation, P | None, Measurement], list[tuple[str, float, str]]] = _nothing


RUN_SECTIONS: Registry[RunSection[Any]] = Registry("run section")


def with_parts(ev: Evaluation) -> list[tuple[RunSection[Any], Any]]:
    """Every registered section, in the report's order (run_analyses.ORDER), with this evaluation's part (None:
    the analysis does not apply to this run)."""
    from rtvbench.run_analyses import ORDER, load

    load("section")
    sections = [s for s in (RUN_SECTIONS.get(name) for name in ORDER) if s is not None]
    return [(s, ev.part(s.analysis)) for s in sections]
