"""The `kernel-tracer` section: the tracer's figures per environment and load (average, min, max over
the repetitions), each repetition, one row per CPU, and the overhead tables of the compared pairs.

The generic measurement-suite tables are reused with the kind's own figure list; the numbers come
from the kind's decoder and the comparison machinery.
"""

from __future__ import annotations

from rtvbench.analysis.evaluation import Evaluation
from rtvbench.analysis.kind import Kind, cpu_figure
from rtvbench.report import suite
from rtvbench.report.section import Parts, Section, register
from rtvbench.report.tables import Row, Table

#: the key results' figures: timerlat's, then osnoise's (a benchmark has one set)
KEY = ("irq_p99_us", "irq_max_us", "thread_p99_us", "thread_max_us", "noise_percent", "max_single_noise_us",
       "hw_events")
#: the per-CPU table's figures
CPU_TABLE = ("irq_avg_us", "irq_max_us", "thread_avg_us", "thread_max_us", "noise_percent",
             "max_single_noise_us", "hw_events", "irq_events")


class KernelTracerSection(Section):
    kind = "kernel-tracer"

    def parts(self, ev: Evaluation, bench: str, kind: Kind, with_plots: bool, id_prefix: str) -> Parts:
        present = ev.data.figure_names(bench)
        stems = kind.row_figures(present)
        tables: list[Table] = []
        if any(ev.summary(env, load, bench, f) for env, load in ev.data.cells(bench) for f in stems):
            tables.append(suite.avg_min_max_table(ev, bench, kind, stems))
            tables += suite.repetition_tables(ev, bench, kind, stems)
        cpu = _cpu_table(ev, bench, kind)
        if cpu:
            tables.append(cpu)
        return Parts(tables, suite.overhead_tables(ev, bench, kind, kind.compared_figures(present)), [])

    def key_columns(self, ev: Evaluation, bench: str, kind: Kind, env: str, load: str) -> list[tuple[str, str]]:
        out = []
        for figure in KEY:
            s = ev.summary(env, load, bench, figure)
            if s and s.n:
                out.append((kind.label(figure), kind.format(s.median, figure)))
        return out

    def distribution_axis(self) -> str:
        return "latency"


def _cpu_table(ev: Evaluation, bench: str, kind: Kind) -> Table | None:
    """Per environment, load and CPU the tracer's figures (medians over the repetitions)."""
    data = ev.data
    present = set(data.figure_names(bench))
    rows = []
    figures: list[str] = []
    for env, load in data.cells(bench):
        cpus = sorted({int(f[3:].split(".")[0]) for f in present if f.startswith("cpu") and "." in f})
        for cpu in cpus:
            cells = []
            for figure in CPU_TABLE:
                name = cpu_figure(cpu, figure)
                if name not in present:
                    continue
                if figure not in figures:
                    figures.append(figure)
                s = ev.summary(env, load, bench, name)
                cells.append(kind.format(s.median, figure) if s and s.n else "–")
            if cells:
                rows.append(Row([f"`{env}`", f"`{load}`", str(cpu), *cells]))
    if not rows:
        return None
    return Table("Per CPU (medians over the repetitions)", ["Environment", "Load", "CPU"]
                 + [kind.label(f) for f in figures], rows, numeric_from=2)


register(KernelTracerSection())
