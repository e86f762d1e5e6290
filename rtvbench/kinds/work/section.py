"""The `work` section: run times normalised to the baseline environment (one bar per workload
and candidate environment) and the verification of every workload in every run.

Normalised time = median(candidate run times) / median(baseline run times) over repetitions,
with its bootstrap interval: the environment comparison of the analysis, drawn as bars.
A workload that computed a wrong result is a failed measurement and is marked as such.
"""

from __future__ import annotations

from rtvbench.analysis.evaluation import Evaluation
from rtvbench.analysis.kind import Kind
from rtvbench.kinds.work.decode import verification
from rtvbench.units import counted, human_duration
from rtvbench.report import plots, suite
from rtvbench.report.section import Parts, Section, register
from rtvbench.report.tables import Plot, Row, Table


def _checks(ev: Evaluation, bench: str) -> dict[str, list[tuple[str, str, int, bool | None, str | None]]]:
    """workload -> [(environment, load, repetition, verified, error)] over every measurement."""
    out: dict[str, list] = {}
    for m in ev.data.measurements(benchmark=bench):
        for c in verification(m):
            out.setdefault(c.workload, []).append((m.environment, m.load, m.repetition, c.verified, c.error))
    return out


def _verification_cell(checks) -> tuple[str, bool]:
    failed = [c for c in checks if c[3] is False]
    if not failed:
        return ("verified in the one run" if len(checks) == 1 else f"verified in all {len(checks)} runs"), False
    cells: dict[tuple[str, str], list[int]] = {}
    for env, load, rep, _, _ in failed:
        cells.setdefault((env, load), []).append(rep + 1)
    where = "; ".join(f"`{env}`/`{load}` #{', #'.join(map(str, sorted(reps)))}" for (env, load), reps in cells.items())
    reasons = "; ".join(dict.fromkeys(err or "wrong result" for *_, err in failed))
    return f"FAILED in {len(failed)} of {counted(len(checks), 'run')} ({where}): {reasons}", True


class WorkSection(Section):
    kind = "work"

    def parts(self, ev: Evaluation, bench: str, kind: Kind, with_plots: bool, id_prefix: str) -> Parts:
        tables, plots_ = _normalised(ev, bench, kind, with_plots, id_prefix)
        tables += _scaling(ev, bench, kind) + _style_rates(ev, bench, kind)
        common, comparisons, _ = suite.parts(ev, bench, kind, with_plots, id_prefix)
        # The normalised-workload table already shows the environment comparison (time relative to the baseline).
        return Parts(tables + common, [t for t in comparisons if " load `" in t.caption], plots_)

    def key_columns(self, ev: Evaluation, bench: str, kind: Kind, env: str, load: str) -> list[tuple[str, str]]:
        verified = kind.key_result(ev.data, bench, env, load)
        return ([("Verification", verified)] if verified else []) + suite.key_columns(ev, bench, kind, env, load)

    def json(self, ev: Evaluation, benches: list[str]) -> dict:
        return {"workloads": {b: _workloads(ev, b) for b in benches}}


def _normalised(ev: Evaluation, bench: str, kind, with_plots: bool, id_prefix: str):
    data = ev.data
    base = data.baseline_environment
    stems = kind.table_stems(data.figure_names(bench))
    checks = _checks(ev, bench)
    workloads = sorted(set(stems) | set(checks), key=kind.order)
    comps = {(c.context, c.candidate, c.figure): c for c in ev.comparisons
             if c.benchmark == bench and c.axis == "environment" and not c.declared}
    candidates = [e for e in data.environments if e != base and any(e == env for env, _ in data.cells(bench))]

    tables, out_plots = [], []
    for load in data.loads:
        if (base, load) not in data.cells(bench):
            continue
        cands = [e for e in candidates if (e, load) in data.cells(bench)]
        header = ["Workload", "Verification", f"{base} median", f"{base} rate"]
        for e in cands:
            header += [f"{e} median", f"{e} rate", f"{e} / {base}", f"{e} 95 % CI", f"{e} verdict"]
        rows = []
        present = set(data.figure_names(bench))
        for w in workloads:
            text, failed = _verification_cell(checks.get(w, []))
            s = ev.summary(base, load, bench, w)
            cells = [f"{kind.label(w)} `{w}`", text, human_duration(s.median) if s else "–",
                     _rate(ev, kind, present, base, load, bench, w)]
            for e in cands:
                a = ev.summary(e, load, bench, w)
                c = comps.get((load, e, w))
                t = c.test if c else None
                cells += [human_duration(a.median) if a else "–", _rate(ev, kind, present, e, load, bench, w),
                          f"{t.ratio:.3f}" if t and t.ratio is not None else "–",
                          f"{t.ci_low:.3f} .. {t.ci_high:.3f}" if t and t.ci_low is not None else "–",
                          t.verdict if t else "–"]
            rows.append(Row(cells, "failed" if failed else ""))
        tables.append(Table(f"{bench}: workloads under `{load}`, run time normalised to `{base}`", header, rows,
                            numeric_from=2,
                            note="Median run time over the completed repetitions, and beside it the median rate "
                                 "(bytes/s for byte kernels, flop/s for floating-point ones, else runs/s); "
                                 "normalised = candidate median / baseline median (above 1: slower), 95 % CI by "
                                 "bootstrap. A FAILED workload "
                                 "computed a wrong result: that run is a failed measurement and is left out."))
        if with_plots and cands:
            series = []
            for e in cands:
                ts = [comps[(load, e, w)].test if (load, e, w) in comps else None for w in stems]
                series.append((e, [t.ratio if t else None for t in ts],
                               [(t.ci_low, t.ci_high) if t and t.ci_low is not None else None for t in ts]))
            svg = plots.normalised_bars_svg([kind.label(w) for w in stems], series,
                                            f"{bench}: run time normalised to {base} (under {load})", base,
                                            f"{id_prefix}n{data.loads.index(load)}")
            if svg:
                out_plots.append(Plot(f"Workloads under {load} normalised to {base} (1 = as fast as the "
                                      "baseline; error bars: 95 % CI of the ratio of medians)", svg))
    return tables, out_plots


def _copies(ev: Evaluation, bench: str) -> dict[tuple[str, str], int]:
    """(environment, load) -> the number of copies its measurements ran (`copies` >= 2 only)."""
    out: dict[tuple[str, str], int] = {}
    for m in ev.data.measurements(benchmark=bench):
        for r in m.results:
            n = r.get("copies")
            if isinstance(n, int) and n > 1:
                out[(m.environment, m.load)] = n
    return out


def _scaling(ev: Evaluation, bench: str, kind) -> list[Table]:
    """Multi-core scaling (`copies`): throughput of one copy and of N at once, and the efficiency."""
    copies = _copies(ev, bench)
    if not copies:
        return []
    present = set(ev.data.figure_names(bench))
    workloads = sorted({f[:-len(".scaling_efficiency")] for f in present if f.endswith(".scaling_efficiency")},
                       key=kind.order)
    rows = []
    for w in workloads:
        for (env, load), n in sorted(copies.items()):
            one = ev.summary(env, load, bench, f"{w}.single_ips")
            many = ev.summary(env, load, bench, f"{w}.copies_ips")
            eff = ev.summary(env, load, bench, f"{w}.scaling_efficiency")
            speedup = ev.summary(env, load, bench, f"{w}.speedup")
            if not eff:
                continue
            rows.append(Row([f"{kind.label(w)} `{w}`", f"`{env}`", f"`{load}`", str(n),
                             kind.format(one.median, f"{w}.single_ips") if one else "–",
                             kind.format(many.median, f"{w}.copies_ips") if many else "–",
                             f"{speedup.median:.2f}x" if speedup else "–",
                             f"{eff.median:.2f}"]))
    if not rows:
        return []
    return [Table(f"{bench}: multi-core scaling", ["Workload", "Environment", "Load", "Copies", "1 copy runs/s",
                                                  "N copies runs/s", "Speedup", "Scaling efficiency"], rows,
                  numeric_from=3,
                  note="N copies of the workload run at once (one process each, pinned to distinct CPUs where "
                       "there are enough), alternated in the probe with rounds of one copy alone; runs/s of N "
                       "copies = all their runs / time from the common start to the last copy's end; each of the "
                       "two columns is the median of its own rounds. Speedup = N copies runs/s / 1 copy runs/s "
                       "of a round pair (a 1-copy round and the N-copy round right after it), scaling efficiency = "
                       "speedup / N, each the median over the probe's round pairs, then over repetitions, so "
                       "efficiency = speedup / N in every row: 1 = perfect scaling, 1/N = no gain (e.g. copies "
                       "sharing one CPU). The runs/s columns' quotient can differ from the speedup when the "
                       "rounds vary: it pairs rounds that did not run side by side.")]


def _style_rates(ev: Evaluation, bench: str, kind) -> list[Table]:
    """The rates on the scale of published scores (DMIPS-, MWIPS-, CoreMark-style), median over the
    repetitions of each environment and load, with what they are and are not."""
    present = ev.data.figure_names(bench)
    stems = sorted((f for f in present
                    if f.endswith((".dmips_style", ".mwips_style")) or f.startswith("coremark_style.")), key=kind.order)
    rows = []
    for stem in stems:
        for env, load in ev.data.cells(bench):
            s = ev.summary(env, load, bench, stem)
            if s:
                rows.append(Row([f"{kind.label(stem)} `{stem}`", f"`{env}`", f"`{load}`",
                                 f"{kind.format(s.median, stem)} {kind.unit(stem)}", str(s.n)]))
    if not rows:
        return []
    return [Table(f"{bench}: rates on the scale of published scores (this project's workloads, not those benchmarks)",
                  ["Figure", "Environment", "Load", "Median", "Repetitions"], rows, numeric_from=3,
                  note="DMIPS-style = intmix iterations/s / 1757; MWIPS-style = fpmix counted operations/s / "
                       "10^6; CoreMark-style composite = geometric mean over the measurement's kernels at that "
                       "size of runs/s (1 copy, and N copies together). They put this project's own Dhrystone-, "
                       "Whetstone- and multi-kernel workloads on the scale those scores use; they are not "
                       "Dhrystone's, Whetstone's or CoreMark's scores and do not compare with published ones, "
                       "only between runs of this probe (a composite between runs of the same kernels).")]


def _rate(ev: Evaluation, kind, present: set[str], env: str, load: str, bench: str, workload: str) -> str:
    """The workload's median rate in a cell: what it processes per second, the figure a datasheet or
    another benchmark quotes, beside its run time."""
    for stem in (f"{workload}.bw", f"{workload}.flops", f"{workload}.ops_per_s"):
        if stem in present:
            s = ev.summary(env, load, bench, stem)
            return kind.format(s.median, stem) if s else "–"
    return "–"


def _workloads(ev: Evaluation, bench: str) -> dict:
    """Every workload's verification in every run, and its run time normalised to the baseline environment."""
    checks = [{"environment": m.environment, "load": m.load, "repetition": m.repetition + 1, "workload": c.workload,
               "verified": c.verified, "error": c.error}
              for m in ev.data.measurements(benchmark=bench) for c in verification(m)]
    normalised = [{"workload": c.figure, "load": c.context, "baseline": c.baseline, "candidate": c.candidate,
                   "ratio": c.test.ratio,
                   "ci95": [c.test.ci_low, c.test.ci_high] if c.test.ci_low is not None else None,
                   "verdict": c.test.verdict}
                  for c in ev.comparisons if c.benchmark == bench and c.axis == "environment"]
    return {"baseline_environment": ev.data.baseline_environment, "verification": checks,
            "failed": [x for x in checks if x["verified"] is False], "normalised": normalised}


register(WorkSection())
