"""The `ipc` section: round trips against message size, mean and 99th percentile per transport
(median over the completed repetitions per size, the band the smallest and largest repetition)."""

from __future__ import annotations

from rtvbench.analysis.evaluation import Evaluation
from rtvbench.analysis.kind import Kind
from rtvbench.kinds.ipc import decode as ipc_kind
from rtvbench.report import plots, suite
from rtvbench.report.section import Parts, Section, register
from rtvbench.report.tables import Plot


class IpcSection(Section):
    kind = "ipc"

    def parts(self, ev: Evaluation, bench: str, kind: Kind, with_plots: bool, id_prefix: str) -> Parts:
        tables, comparisons, _ = suite.parts(ev, bench, kind, with_plots, id_prefix)
        return Parts(tables, comparisons, _curves(ev, bench, id_prefix) if with_plots else [])

    def distribution_axis(self) -> str:
        return "round trip"


def _curves(ev: Evaluation, bench: str, id_prefix: str) -> list[Plot]:
    keyed = {f: (f"{p[0]} {p[2]}", p[1]) for f in ev.data.figure_names(bench)
             if (p := ipc_kind.parse_stem(f)) is not None and p[2] in ("avg", "p99")}
    series = suite.size_series(ev, bench, keyed, 1e3)
    svg = plots.size_curves_svg(series, f"{bench}: round trip by message size (median over repetitions)",
                                "round trip (us, log)", f"{id_prefix}i", xlabel="message size (bytes)")
    return [Plot("Round-trip time against message size (log2 axis): mean and 99th percentile per transport",
                 svg)] if svg else []


register(IpcSection())
