"""The `mem-lat` section: the memory latency curve against working-set size, and the cache levels
read off it (lat_mem_rd's figure). Each curve is the median over the completed repetitions per
size, the band the smallest and largest repetition; one line per environment, load and mode."""

from __future__ import annotations

from rtvbench.analysis.cache_levels import RISE, UNNAMED, UNNAMED_WHY, Level
from rtvbench.analysis.evaluation import Evaluation
from rtvbench.analysis.kind import Kind
from rtvbench.units import human_size, significant
from rtvbench.kinds.mem_lat import decode as mem_lat
from rtvbench.report import plots, suite
from rtvbench.report.section import Parts, Section, register
from rtvbench.report.tables import Plot, Row, Table


class MemLatSection(Section):
    kind = "mem-lat"

    def parts(self, ev: Evaluation, bench: str, kind: Kind, with_plots: bool, id_prefix: str) -> Parts:
        tables, plots_ = _curve_parts(ev, bench, with_plots, id_prefix)
        common, comparisons, _ = suite.parts(ev, bench, kind, with_plots, id_prefix)
        return Parts(tables + common, comparisons, plots_)

    def json(self, ev: Evaluation, benches: list[str]) -> dict:
        return {"memory_curves": {b: _memory_curves(ev, b) for b in benches}}

    def key_columns(self, ev: Evaluation, bench: str, kind: Kind, env: str, load: str) -> list[tuple[str, str]]:
        # The curve's levels say more than its first sizes' latencies, which are all L1.
        levels = kind.key_result(ev.data, bench, env, load)
        return [("Levels read off the curve", levels)] if levels else []


def _curve_parts(ev: Evaluation, bench: str, with_plots: bool, id_prefix: str):
    data = ev.data
    curves = mem_lat.curves(data, bench)
    found = mem_lat.levels(data, bench)
    out_plots = []
    if with_plots:
        series = [(f"{env} / {load} ({mode})", pts) for (env, load, mode), pts in curves.items()]
        svg = plots.size_curves_svg(series, f"{bench}: memory read latency (median over repetitions)",
                                    "ns per access (log)", f"{id_prefix}m")
        if svg:
            out_plots.append(Plot("Memory read latency against working-set size (log2 axis); the plateaus of "
                                  "a random chain are the cache levels (a sequential one is prefetched), the band "
                                  "spans the repetitions", svg))
    rows = []
    for (env, load, _), lvls in found.items():
        for lv in lvls:
            last = "and beyond" if lv is lvls[-1] and len(lvls) > 1 else f"to {human_size(lv.last_size)}"
            rows.append(Row([f"{env} / {load}", lv.name, f"{significant(lv.latency_ns)}",
                             f"{human_size(lv.first_size)} {last}", str(lv.points),
                             _check(lv, bool(mem_lat.reported(data, env)))]))
    tables = []
    if rows:
        tables.append(Table(f"{bench}: cache levels read off the random-chain curves",
                            ["Environment / load", "Level", "Latency (ns)", "Working sets", "Sizes",
                             "Against the reported caches"],
                            rows, numeric_from=2, numeric_to=5,
                            note="Plateaus of the per-size medians (runs of sizes within 1.5x of each other covering "
                                 "at least a doubling of the working set), named after the caches the machine "
                                 "reports (sysfs) where it does: a plateau ending within 2x of a reported size is "
                                 "that level, one that does not fit in the last-level cache is DRAM; a level's name "
                                 "is one plateau's. A level "
                                 "closer than 1.5x to its neighbour is not told apart. Sequential chains are "
                                 "prefetched and get no levels."))
    return tables, out_plots


def _check(lv: Level, sizes_reported: bool) -> str:
    """How a level compares with the caches the machine reports."""
    if lv.name == RISE:
        return "no plateau: which sizes are main memory needs the cache sizes"
    if lv.name == "DRAM":
        return "beyond the caches" if sizes_reported else "–"
    if lv.name == UNNAMED:
        return UNNAMED_WHY
    if lv.reported_size:
        return f"ends near the {human_size(lv.reported_size)} reported"
    if lv.unmatched:
        return "no reported cache ends near it"
    return "no cache sizes reported"


def _memory_curves(ev: Evaluation, bench: str) -> list[dict]:
    """The latency curves (median, min, max over repetitions per size) and the levels read off them."""
    found = mem_lat.levels(ev.data, bench)
    return [{"environment": env, "load": load, "mode": mode,
             "points": [{"size_bytes": s, "median_ns": med, "min_ns": lo, "max_ns": hi}
                        for s, med, lo, hi in pts],
             "cache_levels": [{"name": lv.name, "latency_ns": lv.latency_ns, "first_size_bytes": lv.first_size,
                               "last_size_bytes": lv.last_size, "settled": lv.settled,
                               "reported_size_bytes": lv.reported_size, "unmatched_report": lv.unmatched}
                              for lv in found.get((env, load, mode), [])],
             "cache_levels_text": (mem_lat.levels_text(ev.data, (env, load, mode), found[(env, load, mode)])
                                   if (env, load, mode) in found else None)}
            for (env, load, mode), pts in mem_lat.curves(ev.data, bench).items()]


register(MemLatSection())
