"""The `mem-bw` section: bandwidth against buffer size, one line per operation (median over the
completed repetitions per size, the band the smallest and largest repetition)."""

from __future__ import annotations

from rtvbench.analysis.evaluation import Evaluation
from rtvbench.analysis.kind import Kind
from rtvbench.kinds.mem_bw import decode as mem_bw
from rtvbench.report import plots, suite
from rtvbench.report.section import Parts, Section, register
from rtvbench.report.tables import Plot


class MemBwSection(Section):
    kind = "mem-bw"

    def parts(self, ev: Evaluation, bench: str, kind: Kind, with_plots: bool, id_prefix: str) -> Parts:
        tables, comparisons, _ = suite.parts(ev, bench, kind, with_plots, id_prefix)
        return Parts(tables, comparisons, _curves(ev, bench, id_prefix) if with_plots else [])


def _curves(ev: Evaluation, bench: str, id_prefix: str) -> list[Plot]:
    keyed = {f: p for f in ev.data.figure_names(bench) if (p := mem_bw.parse_stem(f)) is not None}
    series = suite.size_series(ev, bench, {f: (op, size) for f, (op, size) in keyed.items()}, 1e9)
    svg = plots.size_curves_svg(series, f"{bench}: memory bandwidth (median over repetitions)", "GB/s (log)",
                                f"{id_prefix}b", xlabel="buffer size per thread (bytes)")
    return [Plot("Bandwidth against buffer size (log2 axis), one line per operation", svg)] if svg else []


register(MemBwSection())
