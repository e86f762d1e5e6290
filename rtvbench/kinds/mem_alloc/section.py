"""The `mem-alloc` section: the measurement-suite tables, and the alloc_dealloc table of every
allocate/touch/free cycle — per method, touch and size, the average, minimum and maximum cycle
over all iterations of the completed repetitions (cold and warm cycles alike)."""

from __future__ import annotations

from rtvbench.analysis.dataset import COMPLETE
from rtvbench.analysis.evaluation import Evaluation
from rtvbench.analysis.kind import Kind
from rtvbench.catalog import MEM_ALLOC_METHODS, MEM_ALLOC_TOUCH
from rtvbench.report import suite
from rtvbench.report.section import Parts, Section, register
from rtvbench.report.tables import Row, Table
from rtvbench.units import human_size, significant, size_token


class MemAllocSection(Section):
    kind = "mem-alloc"

    def parts(self, ev: Evaluation, bench: str, kind: Kind, with_plots: bool, id_prefix: str) -> Parts:
        tables, comparisons, plots = suite.parts(ev, bench, kind, with_plots, id_prefix)
        cycles = cycle_table(ev, bench, kind)
        return Parts(([cycles] if cycles else []) + tables, comparisons, plots)


def cycle_stats(ev: Evaluation, bench: str) -> dict[tuple, list[int]]:
    """Every cycle's duration (ns) per (environment, load, method, touch, size), over the completed
    repetitions, in order."""
    out: dict[tuple, list[int]] = {}
    for m in ev.data.measurements(benchmark=bench, statuses=COMPLETE):
        for r in m.results:
            values = r.get("values_ns")
            if (r.get("test") != "alloc" or r.get("method") not in MEM_ALLOC_METHODS
                    or r.get("touch") not in MEM_ALLOC_TOUCH or not isinstance(r.get("size_bytes"), int)
                    or not isinstance(values, list) or not values
                    or not all(isinstance(v, int) and not isinstance(v, bool) for v in values)):
                continue
            key = (m.environment, m.load, r["method"], r["touch"], r["size_bytes"])
            out.setdefault(key, []).extend(values)
    return out


def cycle_table(ev: Evaluation, bench: str, kind: Kind) -> Table | None:
    stats = cycle_stats(ev, bench)
    if not stats:
        return None
    cells = ev.data.cells(bench)
    rows = []
    for key in sorted(stats, key=lambda k: (cells.index(k[:2]) if k[:2] in cells else len(cells),
                                           MEM_ALLOC_METHODS.index(k[2]), MEM_ALLOC_TOUCH.index(k[3]), k[4])):
        env, load, method, touch, size = key
        values = stats[key]
        avg, lo, hi = sum(values) / len(values), min(values), max(values)
        stem = f"alloc.{method}.{touch}.{size_token(size)}.avg"
        unit, scale = suite.row_unit(kind, stem, [avg])
        rows.append(Row([f"{env} / {load}", f"{method} + {touch} touch", human_size(size), unit,
                         significant(avg / scale), significant(lo / scale), significant(hi / scale),
                         str(len(values))]))
    return Table(f"{bench}: allocate, touch and free, every cycle: average, minimum, maximum",
                 ["Environment / load", "Method", "Size", "Unit", "Ave", "Min", "Max", "Cycles"], rows,
                 numeric_from=4,
                 note="alloc_dealloc's table: each cycle (allocate, touch, free) is timed on its own; Ave, Min and "
                      "Max are over every cycle of the completed repetitions, the first (cold) ones included, so "
                      "Max is usually the first cycle and Min a warm one where the method has warm cycles. "
                      "Cycles = iterations x repetitions.")


register(MemAllocSection())
