"""Curves of the size-swept kinds: the memory latency curve with its cache levels (reference 000's
lat_mem_rd figures), bandwidth against buffer size, and IPC round trips against message size.

Every curve is the median over the completed repetitions per size, the band the smallest and
largest repetition; one line per environment and load (and per mode, operation or transport).
"""

from __future__ import annotations

from rtvbench.analysis.evaluation import Evaluation
from rtvbench.analysis.kinds import ipc as ipc_kind
from rtvbench.analysis.kinds import mem_bw, mem_lat
from rtvbench.analysis.units import human_size, significant
from rtvbench.report import plots
from rtvbench.report.model import Plot, Row, Table


def latency_parts(ev: Evaluation, bench: str, kind, with_plots: bool, id_prefix: str):
    data = ev.data
    curves = mem_lat.curves(data, bench)
    found = mem_lat.levels(data, bench)
    out_plots = []
    if with_plots:
        series = [(f"{env} / {load} ({mode})", pts) for (env, load, mode), pts in curves.items()]
        svg = plots.size_curves_svg(series, f"{bench}: memory read latency (median over repetitions)",
                                    "ns per access (log)", f"{id_prefix}m")
        if svg:
            out_plots.append(Plot("Memory read latency against working-set size (log2 axis); plateaus are the "
                                  "cache levels, the band spans the repetitions", svg))
    rows = []
    for (env, load, mode), lvls in found.items():
        for lv in lvls:
            last = "and beyond" if lv is lvls[-1] and len(lvls) > 1 else f"to {human_size(lv.last_size)}"
            rows.append(Row([f"{env} / {load}", mode, lv.name, f"{significant(lv.latency_ns)}",
                             f"{human_size(lv.first_size)} {last}", str(lv.points)]))
    tables = []
    if rows:
        tables.append(Table(f"{bench}: cache levels detected from the curves",
                            ["Environment / load", "Mode", "Level", "Latency (ns)", "Working sets", "Sizes"],
                            rows, numeric_from=3,
                            note="Plateaus of the per-size medians (runs of sizes within 1.5x of each other covering "
                                 "at least a doubling of the working set); the last level is named DRAM. A level "
                                 "closer than 1.5x to its neighbour is not told apart."))
    return tables, out_plots


def _series(ev: Evaluation, bench: str, keyed: dict[str, tuple[str, float]], scale: float):
    """Per (environment / load, group) the (x, median, min, max) points of the stems in `keyed`
    (stem -> (group, x)), values divided by `scale`."""
    out: dict[str, list] = {}
    for env, load in ev.data.cells(bench):
        for stem, (group, x) in keyed.items():
            s = ev.summary(env, load, bench, stem)
            if s and s.n:
                out.setdefault(f"{env} / {load}: {group}", []).append(
                    (x, s.median / scale, s.min / scale, s.max / scale))
    return list(out.items())


def bandwidth_parts(ev: Evaluation, bench: str, kind, with_plots: bool, id_prefix: str):
    if not with_plots:
        return [], []
    keyed = {f: p for f in ev.data.figure_names(bench) if (p := mem_bw.parse_stem(f)) is not None}
    series = _series(ev, bench, {f: (op, size) for f, (op, size) in keyed.items()}, 1e9)
    svg = plots.size_curves_svg(series, f"{bench}: memory bandwidth (median over repetitions)", "GB/s (log)",
                                f"{id_prefix}b", xlabel="buffer size per thread (bytes)")
    return [], [Plot("Bandwidth against buffer size (log2 axis), one line per operation", svg)] if svg else []


def ipc_parts(ev: Evaluation, bench: str, kind, with_plots: bool, id_prefix: str):
    if not with_plots:
        return [], []
    keyed = {f: (f"{p[0]} {p[2]}", p[1]) for f in ev.data.figure_names(bench)
             if (p := ipc_kind.parse_stem(f)) is not None and p[2] in ("avg", "p99")}
    series = _series(ev, bench, keyed, 1e3)
    svg = plots.size_curves_svg(series, f"{bench}: round trip by message size (median over repetitions)",
                                "round trip (us, log)", f"{id_prefix}i", xlabel="message size (bytes)")
    return [], [Plot("Round-trip time against message size (log2 axis): mean and 99th percentile per transport",
                     svg)] if svg else []
