"""The `kernel-tracer` section: the tracer's figures per environment and load (average, min, max over
the repetitions), each repetition, one row per CPU, and the overhead tables of the compared pairs.

The generic measurement-suite tables are reused with the kind's own figure list; the numbers come
from the kind's decoder and the comparison machinery.
"""

from __future__ import annotations

from rtvbench.analysis.evaluation import Evaluation
from rtvbench.analysis.kind import Kind
from rtvbench.report import suite
from rtvbench.report.section import Parts, Section, register

#: the key results' figures: timerlat's, osnoise's, then hwlat's (a benchmark has one set)
KEY = ("irq_p99_us", "irq_max_us", "thread_p99_us", "thread_max_us", "noise_percent", "max_single_noise_us",
       "hw_events", "hwlat_max_us", "detections")
#: the per-CPU table's figures
CPU_TABLE = ("irq_avg_us", "irq_max_us", "thread_avg_us", "thread_max_us", "noise_percent",
             "max_single_noise_us", "hw_events", "irq_events", "detections", "hwlat_max_us")


class KernelTracerSection(Section):
    kind = "kernel-tracer"

    def parts(self, ev: Evaluation, bench: str, kind: Kind, with_plots: bool, id_prefix: str) -> Parts:
        tables, comparisons = suite.figure_parts(ev, bench, kind)
        cpu = suite.cpu_table(ev, bench, kind, CPU_TABLE)
        return Parts(tables + ([cpu] if cpu else []), comparisons, [])

    def key_columns(self, ev: Evaluation, bench: str, kind: Kind, env: str, load: str) -> list[tuple[str, str]]:
        return suite.median_columns(ev, bench, kind, env, load, KEY)

    def distribution_axis(self) -> str:
        return "latency"


register(KernelTracerSection())
