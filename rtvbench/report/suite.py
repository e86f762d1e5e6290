"""Result tables of the measurement-suite kinds.

* "avg (min x, max y)" over the repetitions, one column per environment and load (LMbench's
  summary layout);
* each repetition's figures, one table per environment and load, one column per repetition;
* the medians of a baseline and of a candidate with the difference and the percent overhead (a
  table per compared pair) — the overhead, its interval and the verdict are the comparison
  machinery's (ratio of medians, bootstrap CI, Mann-Whitney or Welch on logs), not recomputed.

Each row is shown in one unit chosen from its magnitude (ns, us, ms; MB/s, GB/s ...), so a row
of nanoseconds and a row of milliseconds both read well. The kind-specific plots and tables
(memory curves, normalised workloads) are added by each kind's section (rtvbench/kinds/<kind>/section.py).
"""

from __future__ import annotations

import math

from rtvbench.analysis.compare import NO_DATA, Comparison, p_text
from rtvbench.analysis.dataset import COMPLETE
from rtvbench.analysis.kind import Kind, cpu_figure
from rtvbench.analysis.evaluation import Evaluation
from rtvbench.analysis.quantities import BANDWIDTH, RATE, TIME, QuantityKind
from rtvbench.units import BYTE_RATE_SHOWN, format_percent, significant
from rtvbench.report.tables import Plot, Row, Table

_TIME_UNITS = (("s", 1e9), ("ms", 1e6), ("us", 1e3), ("ns", 1.0))
_PREFIXES = (("G", 1e9), ("M", 1e6), ("k", 1e3), ("", 1.0))


def row_unit(kind: Kind, stem: str, values: list[float]) -> tuple[str, float]:
    """(unit label, divisor from the base unit) that suits the magnitude of a row's values; a kind whose
    figure names carry their unit (`max_us`) keeps that unit."""
    if not isinstance(kind, QuantityKind):
        unit = kind.unit(stem)
        if unit == "B/s":
            return BYTE_RATE_SHOWN
        return ("" if unit == "count" else unit), 1.0
    fam = kind.split(stem)[1]
    ref = sorted(abs(v) for v in values if v is not None and math.isfinite(v))
    ref = ref[len(ref) // 2] if ref else 0.0
    if fam == TIME:
        return next(((u, s) for u, s in _TIME_UNITS if ref >= s), ("ns", 1.0))
    if fam in (BANDWIDTH, RATE):
        unit = "B/s" if fam == BANDWIDTH else kind.rate_unit(stem)
        return next(((p + unit, s) for p, s in _PREFIXES if ref >= s), (unit, 1.0))
    return "", 1.0


def _num(v: float | None, scale: float) -> str:
    return "–" if v is None else significant(v / scale)


def _cells(ev: Evaluation, bench: str) -> list[tuple[str, str]]:
    return ev.data.cells(bench)


def avg_min_max_table(ev: Evaluation, bench: str, kind: QuantityKind, stems: list[str]) -> Table:
    cells = _cells(ev, bench)
    header = ["Figure", "Unit"] + [f"{env} / {load}" for env, load in cells]
    rows = []
    dropped_notes = []
    for stem in stems:
        sums = [ev.summary(env, load, bench, stem) for env, load in cells]
        unit, scale = row_unit(kind, stem, [s.median for s in sums if s])
        out = []
        for (env, load), s in zip(cells, sums):
            dropped = ev.left_out(env, load, bench, stem)
            extra = f"; {dropped[0]} more not a value" if dropped else ""
            if s is None:
                out.append(f"– ({ev.no_value(env, load, bench, stem)})")
            elif s.n == 1:
                out.append(_num(s.mean, scale) + (f" ({extra[2:]})" if extra else ""))
            else:
                sd = f" ± {_num(s.stddev, scale)}" if s.stddev is not None else ""
                out.append(f"{_num(s.mean, scale)}{sd} (min {_num(s.min, scale)}, max {_num(s.max, scale)}{extra})")
            if dropped and s is not None:
                dropped_notes.append(f" `{stem}` in {env} / {load}: {dropped[0]} of {s.n + dropped[0]} "
                                     f"repetitions not a value, left out ({dropped[1]}).")
        rows.append(Row([f"{kind.label(stem)} `{stem}`", unit] + out))
    reps = {s.n for env, load in cells for stem in stems if (s := ev.summary(env, load, bench, stem))}
    n = f"{min(reps)}" if len(reps) == 1 else f"{min(reps)}-{max(reps)}" if reps else "0"
    return Table(f"{bench}: average ± sd (min, max) over {n} completed repetition{'s' if reps != {1} else ''}",
                 header, rows, numeric_from=2,
                 note="LMbench style: the mean of the repetitions' figures ± their standard deviation (sample, "
                      "n - 1: mean ± sd as evaluations quote them), with the smallest and the largest."
                      + "".join(dropped_notes))


#: more repetitions than this make a table too wide to read: the CSV export has every one
MAX_REPETITION_COLUMNS = 20


def repetition_tables(ev: Evaluation, bench: str, kind: QuantityKind, stems: list[str]) -> list[Table]:
    """Per environment and load, every repetition's figures side by side (a figure per row, a repetition
    per column, the median last): what the summaries and comparisons are computed from, so that an
    outlier repetition can be seen."""
    data = ev.data
    out = []
    for env, load in _cells(ev, bench):
        ms = data.measurements(env, load, bench)
        if not ms or len(ms) > MAX_REPETITION_COLUMNS:
            continue
        header = ["Figure", "Unit"] + [f"#{m.repetition + 1}" for m in ms] + ["median"]
        rows = [Row(["status", ""] + [m.status for m in ms] + [""], "summary")]
        for stem in stems:
            values = [data.figures(m).get(stem) if m.status in COMPLETE else None for m in ms]
            if all(v is None for v in values):
                continue
            s = ev.summary(env, load, bench, stem)
            unit, scale = row_unit(kind, stem, [v for v in values if v is not None])
            rows.append(Row([f"{kind.label(stem)} `{stem}`", unit] + [_num(v, scale) for v in values]
                            + [_median(s, scale)]))
        failed = [m for m in ms if m.status not in COMPLETE]
        if len(rows) > 1:
            out.append(Table(f"{bench}: `{env}` under `{load}`, each repetition", header, rows, numeric_from=2,
                             note="The median is over the completed repetitions only."
                                  + "".join(f" #{m.repetition + 1} {m.status}: {m.error or 'no figures'}."
                                            for m in failed)))
    return out


def overhead_tables(ev: Evaluation, bench: str, kind: Kind, figures: list[str]) -> list[Table]:
    """One table per compared pair (a candidate environment against the baseline under one load, or a
    load against the baseline load in one environment), environment comparisons first, each axis in
    the campaign's order: per figure the baseline's and the candidate's median, their difference,
    the percent overhead with its 95 % interval, the p-value and the verdict (one statistic, the
    median, throughout). The numbers are the comparison machinery's (analysis.compare), not recomputed here."""
    data = ev.data
    comps: dict[tuple, dict[str, Comparison]] = {}
    for c in ev.comparisons:
        if c.benchmark == bench:
            comps.setdefault((c.axis, c.context, c.baseline, c.candidate), {})[c.figure] = c

    def place(names: list[str], name: str) -> int:
        return names.index(name) if name in names else len(names)

    def key(pair):
        axis, context, baseline, candidate = pair
        declared = next(iter(comps[pair].values())).declared
        if axis == "environment":
            return (declared, 0, place(data.loads, context), place(data.environments, baseline),
                    place(data.environments, candidate))
        return (declared, 1, place(data.environments, context), place(data.loads, baseline),
                place(data.loads, candidate))

    out = []
    for pair in sorted(comps, key=key):
        axis, context, baseline, candidate = pair
        first = next(iter(comps[pair].values()))
        base_cell = (first.baseline_environment, first.baseline_load)
        cand_cell = (first.candidate_environment, first.candidate_load)
        if axis == "environment":
            caption = (f"{bench}: `{candidate}` against {'' if first.declared else 'the baseline '}`{baseline}`, "
                       f"both under `{context}`")
        else:
            caption = f"{bench}: load `{candidate}` against `{baseline}`, both in `{context}`"
        header = ["Figure", "Unit", f"{base_cell[0]} / {base_cell[1]} (median)",
                  f"{cand_cell[0]} / {cand_cell[1]} (median)", "Δ median", "Overhead", "95 % CI",
                  "p", "n", "Verdict"]
        rows = []
        for figure in figures:
            c = comps[pair].get(figure)
            if c is None:
                continue
            t = c.test
            b = ev.summary(*base_cell, bench, figure)
            a = ev.summary(*cand_cell, bench, figure)
            unit, scale = row_unit(kind, figure, [s.median for s in (b, a) if s])
            if c.no_data:
                rows.append(Row([_figure_label(kind, figure), unit, _median(b, scale), _median(a, scale)]
                                + ["–"] * 5 + [f"{NO_DATA}: {c.no_data}"], "no-data"))
                continue
            delta = t.difference
            ci = t.ci_percent
            rows.append(Row([_figure_label(kind, figure), unit, _median(b, scale), _median(a, scale),
                             "–" if delta is None else ("+" if delta > 0 else "") + _num(delta, scale),
                             format_percent(t.overhead_percent),
                             f"{format_percent(ci[0])} .. {format_percent(ci[1])}" if ci else "–",
                             p_text(t),
                             f"{t.n_baseline} vs {t.n_candidate}", t.verdict],
                            t.verdict.replace(" ", "-")))
        if rows:
            out.append(Table(caption, header, rows, numeric_from=2, numeric_to=9,
                             note="Medians over repetitions: one statistic for every column. Overhead: "
                                  "positive is worse; for times and counts median(candidate) / median(baseline) "
                                  "- 1, for bandwidths and rates the share lost, 1 - median(candidate) / "
                                  "median(baseline). 95 % CI by bootstrap and p by Mann-Whitney U; with too "
                                  "few repetitions for a rank test (fewer than 4 per side), p and CI (marked "
                                  "\"(t)\") come from Welch's t-test on log values. Equivalent: the 90 % "
                                  f"interval lies within ±{ev.data.spec.equivalence_percent:g} %; significant: "
                                  "p < 0.05 and the CI excludes 0 %; otherwise the data cannot tell."))
    return out


def _figure_label(kind: Kind, figure: str) -> str:
    label = kind.label(figure)
    return f"{label} `{figure}`" if label != figure else f"`{figure}`"


def _median(s, scale: float) -> str:
    return "–" if s is None else _num(s.median, scale)


def parts(ev: Evaluation, bench: str, kind: QuantityKind, with_plots: bool,
          id_prefix: str) -> tuple[list[Table], list[Table], list[Plot]]:
    """(result tables, comparison tables, plots) of one benchmark of a measurement-suite kind: the
    average (min, max) table and one overhead table per compared pair; a kind's section adds its own."""
    stems = kind.table_stems(ev.data.figure_names(bench))
    tables: list[Table] = []
    if any(ev.summary(env, load, bench, stem) for env, load in ev.data.cells(bench) for stem in stems):
        tables.append(avg_min_max_table(ev, bench, kind, stems))
        tables += repetition_tables(ev, bench, kind, stems)
    return tables, overhead_tables(ev, bench, kind, kind.compared_figures(ev.data.figure_names(bench))), []


#: headline figures per benchmark in the key results table
KEY_FIGURES = 3


def key_columns(ev: Evaluation, bench: str, kind: QuantityKind, env: str, load: str) -> list[tuple[str, str]]:
    """The first headline figures' medians in a cell, for the report's key results."""
    out = []
    for stem in kind.compared_figures(ev.data.figure_names(bench))[:KEY_FIGURES]:
        s = ev.summary(env, load, bench, stem)
        if s and s.n:
            out.append((f"{kind.label(stem)} `{stem}`", kind.format(s.median, stem)))
    return out


def size_series(ev: Evaluation, bench: str, keyed: dict[str, tuple[str, float]], scale: float):
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


def figure_parts(ev: Evaluation, bench: str, kind: Kind) -> tuple[list[Table], list[Table]]:
    """(result tables, comparison tables) of a kind whose figure names carry their unit: the average (min,
    max) and per-repetition tables of its row figures, the overhead tables of its compared ones."""
    present = ev.data.figure_names(bench)
    stems = [f for f in kind.row_figures(present) if f in present]
    tables: list[Table] = []
    if any(ev.summary(env, load, bench, f) for env, load in ev.data.cells(bench) for f in stems):
        tables.append(avg_min_max_table(ev, bench, kind, stems))
        tables += repetition_tables(ev, bench, kind, stems)
    compared = [f for f in kind.compared_figures(present) if f in present]
    return tables, overhead_tables(ev, bench, kind, compared)


def cpu_table(ev: Evaluation, bench: str, kind: Kind, figures: tuple[str, ...], note: str = "") -> Table | None:
    """Per environment, load and CPU the medians over the completed repetitions of those `figures` that
    some CPU has (kinds that measure per CPU)."""
    data = ev.data
    present = set(data.figure_names(bench))
    shown = [f for f in figures if any(n.endswith("." + f) and n.startswith("cpu") for n in present)]
    rows = []
    for env, load in data.cells(bench):
        ms = data.measurements(env, load, bench, COMPLETE)
        for cpu in sorted({c for m in ms for c in data.result(m).cpus}):
            cells = [env, load, str(cpu)]
            for figure in shown:
                s = ev.summary(env, load, bench, cpu_figure(cpu, figure))
                cells.append("–" if s is None else kind.format(s.median, figure))
            rows.append(Row(cells))
    if not rows or not shown:
        return None
    header = ["Environment", "Load", "CPU"] + [kind.label(f) for f in shown]
    return Table(f"{bench}: per CPU (median over the completed repetitions)", header, rows, numeric_from=3,
                 note=note)


def median_columns(ev: Evaluation, bench: str, kind: Kind, env: str, load: str,
                   figures: tuple[str, ...]) -> list[tuple[str, str]]:
    """A cell's (label, median) of those `figures` it has, for a kind's key results columns."""
    out = []
    for figure in figures:
        s = ev.summary(env, load, bench, figure)
        if s and s.n:
            out.append((kind.label(figure), kind.format(s.median, figure)))
    return out
