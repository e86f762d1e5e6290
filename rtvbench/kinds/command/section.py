"""The `command` section: an external tool's figures per environment and load (average, min, max
over the repetitions), each repetition, one row per CPU where the format has them, and the overhead
tables of the compared pairs. Which figures there are depends on the format (and, for `mapping`,
on the campaign), so the tables show the figures the runs have rather than a fixed list."""

from __future__ import annotations

from rtvbench.analysis.evaluation import Evaluation
from rtvbench.analysis.kind import Kind, split_cpu
from rtvbench.report import suite
from rtvbench.report.section import Parts, Section, register

#: figures in the key results table, the first ones the runs have
KEY_FIGURES = 3


class CommandSection(Section):
    kind = "command"

    def parts(self, ev: Evaluation, bench: str, kind: Kind, with_plots: bool, id_prefix: str) -> Parts:
        tables, comparisons = suite.figure_parts(ev, bench, kind)
        per_cpu = tuple(dict.fromkeys(split_cpu(f)[1] for f in ev.data.figure_names(bench)
                                      if split_cpu(f)[0] is not None))
        cpu = suite.cpu_table(ev, bench, kind, per_cpu) if per_cpu else None
        return Parts(tables + ([cpu] if cpu else []), comparisons, [])

    def key_columns(self, ev: Evaluation, bench: str, kind: Kind, env: str, load: str) -> list[tuple[str, str]]:
        figures = tuple(kind.row_figures(ev.data.figure_names(bench))[:KEY_FIGURES])
        return suite.median_columns(ev, bench, kind, env, load, figures)

    def key_caption(self) -> str:
        return "medians over the repetitions of the tool's first figures"


register(CommandSection())
