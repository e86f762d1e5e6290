"""The `network` section: per cell, every repetition's rate, loss and CPU figures, and their average
(min, max) over the cells; the overhead of each environment and load against its baseline."""

from __future__ import annotations

from rtvbench.analysis.evaluation import Evaluation
from rtvbench.analysis.kind import Kind
from rtvbench.report import suite
from rtvbench.report.section import Parts, Section, register


class NetworkSection(Section):
    kind = "network"

    def parts(self, ev: Evaluation, bench: str, kind: Kind, with_plots: bool, id_prefix: str) -> Parts:
        tables, comparisons = suite.figure_parts(ev, bench, kind)
        return Parts(tables, comparisons)

    def key_columns(self, ev: Evaluation, bench: str, kind: Kind, env: str, load: str) -> list[tuple[str, str]]:
        return suite.median_columns(ev, bench, kind, env, load, ("rate_bps", "loss_percent"))


register(NetworkSection())
