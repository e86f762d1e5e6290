"""The `rtos` section: per environment and load one table of the primitives, a row each, with the
medians over the completed repetitions of min, avg, p99 and max (the layout of RTOS evaluations), the
worst max of any repetition; then the overhead tables of the compared pairs (report.suite)."""

from __future__ import annotations

from rtvbench.analysis.dataset import COMPLETE
from rtvbench.analysis.evaluation import Evaluation
from rtvbench.analysis.kind import Kind
from rtvbench.kinds.rtos.decode import rows
from rtvbench.kinds.rtos.names import TABLE_STATS, figure, row_words
from rtvbench.report import suite
from rtvbench.report.section import Parts, Section, register
from rtvbench.report.tables import Row, Table
from rtvbench.units import human_duration

#: rows in the key results
KEY_ROWS = 3


def _median_ns(ev: Evaluation, env: str, load: str, bench: str, row_name: str, stat: str) -> float | None:
    s = ev.summary(env, load, bench, figure(row_name, stat, "ns"))
    return s.median if s and s.n else None


def primitive_tables(ev: Evaluation, bench: str) -> list[Table]:
    data = ev.data
    names = rows(data.figure_names(bench))
    out = []
    for env, load in data.cells(bench):
        n = len(data.measurements(env, load, bench, COMPLETE))
        body = []
        for r in names:
            medians = [_median_ns(ev, env, load, bench, r, s) for s in TABLE_STATS]
            if all(v is None for v in medians):
                continue
            worst = ev.summary(env, load, bench, figure(r, "max", "ns"))
            body.append(Row([row_words(r), f"`{r}`"] + ["–" if v is None else human_duration(v) for v in medians]
                            + ["–" if worst is None else human_duration(worst.max)],
                            "summary" if "." in r else ""))
        if body:
            out.append(Table(f"{bench}: primitives in `{env}` under `{load}` (medians over {n} completed "
                             f"repetition{'s' if n != 1 else ''})",
                             ["Primitive", "Figures", "min", "avg", "p99", "max", "worst max"], body, numeric_from=2,
                             note="Each operation timed on its own; min, avg, p99 and max are over the operations "
                                  "of one repetition, the cell the median of the repetitions' values, worst max the "
                                  "largest of any. A figure is `<benchmark>.<row>.<stat>_us`, e.g. "
                                  f"`{bench}.{names[0]}.p99_us`. Every sample holds one clock read (tens of ns). "
                                  "Ping-pong rows: half the round trip, and the two one-way steps measured inside "
                                  "it."))
    return out


class RtosSection(Section):
    kind = "rtos"

    def parts(self, ev: Evaluation, bench: str, kind: Kind, with_plots: bool, id_prefix: str) -> Parts:
        present = ev.data.figure_names(bench)
        compared = [f for f in kind.compared_figures(present) if f in present]
        return Parts(primitive_tables(ev, bench), suite.overhead_tables(ev, bench, kind, compared), [])

    def key_columns(self, ev: Evaluation, bench: str, kind: Kind, env: str, load: str) -> list[tuple[str, str]]:
        tests = [r for r in rows(ev.data.figure_names(bench)) if "." not in r][:KEY_ROWS]
        return suite.median_columns(ev, bench, kind, env, load, tuple(figure(t, "avg") for t in tests))

    def json(self, ev: Evaluation, benches: list[str]) -> dict:
        out = {}
        for bench in benches:
            cells = []
            for env, load in ev.data.cells(bench):
                for r in rows(ev.data.figure_names(bench)):
                    stats = {f"{s}_ns": _median_ns(ev, env, load, bench, r, s) for s in TABLE_STATS}
                    if any(v is not None for v in stats.values()):
                        cells.append({"environment": env, "load": load, "primitive": r, **stats})
            out[bench] = cells
        return {"primitives": out}

    def distribution_axis(self) -> str:
        return "operation time"


register(RtosSection())
