"""The `noise` section: the figures per environment and load (average, min, max over repetitions), each
repetition, one row per CPU, and the overhead tables of the compared pairs.

The generic measurement-suite tables are reused with the kind's own figure list; the numbers come
from the kind's decoder and the comparison machinery.
"""

from __future__ import annotations

from rtvbench.analysis.dataset import COMPLETE
from rtvbench.analysis.evaluation import Evaluation
from rtvbench.analysis.kind import Kind, cpu_figure
from rtvbench.report import suite
from rtvbench.report.section import Parts, Section, register
from rtvbench.report.tables import Row, Table

#: the per-CPU table's figures
CPU_TABLE = ("events", "min_ns", "p9999_us", "max_us", "noise_per_s_us", "noise_percent")
#: the key results' figures
KEY = ("max_us", "noise_per_s_us", "noise_percent", "events_per_s")


class NoiseSection(Section):
    kind = "noise"

    def parts(self, ev: Evaluation, bench: str, kind: Kind, with_plots: bool, id_prefix: str) -> Parts:
        present = ev.data.figure_names(bench)
        stems = [f for f in kind.row_figures(present) if f in present]
        tables: list[Table] = []
        if any(ev.summary(env, load, bench, f) for env, load in ev.data.cells(bench) for f in stems):
            tables.append(suite.avg_min_max_table(ev, bench, kind, stems))
            tables += suite.repetition_tables(ev, bench, kind, stems)
        cpu = _cpu_table(ev, bench, kind)
        if cpu:
            tables.append(cpu)
        figures = [f for f in kind.compared_figures(present) if f in present]
        return Parts(tables, suite.overhead_tables(ev, bench, kind, figures), [])

    def key_columns(self, ev: Evaluation, bench: str, kind: Kind, env: str, load: str) -> list[tuple[str, str]]:
        out = []
        for figure in KEY:
            s = ev.summary(env, load, bench, figure)
            if s and s.n:
                out.append((kind.label(figure), kind.format(s.median, figure)))
        s = ev.summary(env, load, bench, "max_us")
        if s and s.n:
            out.append(("worst longest gap", kind.format(s.max, "max_us")))
        return out

    def key_caption(self) -> str:
        return "medians over the repetitions; worst longest gap = the largest of any repetition"

    def distribution_axis(self) -> str:
        return "gap between clock reads"


def _cpu_table(ev: Evaluation, bench: str, kind: Kind) -> Table | None:
    """Per environment, load and CPU the interruptions, the loop cost, the longest gap and the noise
    (medians over the completed repetitions)."""
    data = ev.data
    rows = []
    for env, load in data.cells(bench):
        ms = data.measurements(env, load, bench, COMPLETE)
        for cpu in sorted({c for m in ms for c in data.result(m).cpus}):
            cells = [env, load, str(cpu)]
            for figure in CPU_TABLE:
                s = ev.summary(env, load, bench, cpu_figure(cpu, figure))
                cells.append("–" if s is None else kind.format(s.median, figure))
            rows.append(Row(cells))
    if not rows:
        return None
    header = ["Environment", "Load", "CPU"] + [kind.label(f) for f in CPU_TABLE]
    return Table(f"{bench}: per CPU (median over the completed repetitions)", header, rows, numeric_from=3,
                 note="One spinning thread per CPU, pinned. A requirement, the CSV and the JSON address one CPU as "
                      f"`<benchmark>.cpu<N>.<figure>`, e.g. `{bench}.cpu0.max_us`.")


register(NoiseSection())
