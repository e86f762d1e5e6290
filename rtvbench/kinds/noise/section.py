"""The `noise` section: the figures per environment and load (average, min, max over repetitions), each
repetition, one row per CPU, and the overhead tables of the compared pairs.

The generic measurement-suite tables are reused with the kind's own figure list; the numbers come
from the kind's decoder and the comparison machinery.
"""

from __future__ import annotations

from rtvbench.analysis.evaluation import Evaluation
from rtvbench.analysis.kind import Kind
from rtvbench.report import suite
from rtvbench.report.section import Parts, Section, register

#: the per-CPU table's figures
CPU_TABLE = ("events", "min_ns", "p9999_us", "max_us", "noise_per_s_us", "noise_percent")
#: the key results' figures
KEY = ("max_us", "noise_per_s_us", "noise_percent", "events_per_s")


class NoiseSection(Section):
    kind = "noise"

    def parts(self, ev: Evaluation, bench: str, kind: Kind, with_plots: bool, id_prefix: str) -> Parts:
        tables, comparisons = suite.figure_parts(ev, bench, kind)
        cpu = suite.cpu_table(ev, bench, kind, CPU_TABLE, note=(
            "One spinning thread per CPU, pinned. A requirement, the CSV and the JSON address one CPU as "
            f"`<benchmark>.cpu<N>.<figure>`, e.g. `{bench}.cpu0.max_us`."))
        return Parts(tables + ([cpu] if cpu else []), comparisons, [])

    def key_columns(self, ev: Evaluation, bench: str, kind: Kind, env: str, load: str) -> list[tuple[str, str]]:
        out = suite.median_columns(ev, bench, kind, env, load, KEY)
        s = ev.summary(env, load, bench, "max_us")
        if s and s.n:
            out.append(("worst longest gap", kind.format(s.max, "max_us")))
        return out

    def key_caption(self) -> str:
        return "medians over the repetitions; worst longest gap = the largest of any repetition"

    def distribution_axis(self) -> str:
        return "gap between clock reads"


register(NoiseSection())
