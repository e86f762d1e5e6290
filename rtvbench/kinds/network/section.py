"""The `network` section: per cell, every repetition's rate, loss and CPU figures, and their average
(min, max) over the cells; the overhead of each environment and load against its baseline; for a
zero-loss search, every trial's pace and loss."""

from __future__ import annotations

from rtvbench.analysis.dataset import COMPLETE
from rtvbench.analysis.evaluation import Evaluation
from rtvbench.analysis.kind import Kind
from rtvbench.kinds.network.decode import STEP_FIGURES, split_step, step_figure
from rtvbench.report import suite
from rtvbench.report.section import Parts, Section, register
from rtvbench.report.tables import Row, Table


def search_table(ev: Evaluation, bench: str, kind: Kind) -> Table | None:
    """Every trial of every completed repetition's zero-loss search, in the order they ran."""
    data = ev.data
    rows = []
    for env, load in data.cells(bench):
        for m in data.measurements(env, load, bench, COMPLETE):
            figures = data.figures(m)
            trials = sorted({n for n in (split_step(f)[0] for f in figures) if n is not None})
            for n in trials:
                cells = [env, load, f"#{m.repetition + 1}", str(n)]
                cells += [kind.format(figures.get(step_figure(n, f)), step_figure(n, f)) for f in STEP_FIGURES]
                rows.append(Row(cells))
    if not rows:
        return None
    return Table(f"{bench}: the zero-loss search, each trial", ["Environment", "Load", "Repetition", "Trial",
                 "paced rate", "paced datagram rate", "datagrams lost"], rows, numeric_from=3,
                 note="The first trial runs at the ceiling (rate_bps); each further one halves the interval between "
                      "the highest rate that lost nothing and the lowest that lost some. The result is the highest "
                      "paced rate of a trial without loss.")


class NetworkSection(Section):
    kind = "network"

    def parts(self, ev: Evaluation, bench: str, kind: Kind, with_plots: bool, id_prefix: str) -> Parts:
        tables, comparisons = suite.figure_parts(ev, bench, kind)
        search = search_table(ev, bench, kind)
        return Parts(tables + ([search] if search else []), comparisons)

    def key_columns(self, ev: Evaluation, bench: str, kind: Kind, env: str, load: str) -> list[tuple[str, str]]:
        return suite.median_columns(ev, bench, kind, env, load, ("rate_bps", "loss_percent", "sum_rate_Mbps",
                                                                 "zero_loss_Mbps", "zero_loss_kpps"))


register(NetworkSection())
