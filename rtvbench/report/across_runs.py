"""A run against another, laid out: one table per benchmark, the cells each run alone has, the notes,
and the fingerprint of each environment in both runs. `rtvbench compare` prints these, `report
--baseline` puts them in a section, and the JSON forms come from `document`.

The numbers come from rtvbench.analysis.across_runs; this module only lays them out.
"""

from __future__ import annotations

from typing import Any

from rtvbench.analysis.across_runs import AcrossRuns, CellPair
from rtvbench.analysis.compare import p_text
from rtvbench.report.tables import Row, Table
from rtvbench.units import format_percent


def title(x: AcrossRuns) -> str:
    a, b = x.baseline.run, x.candidate.run
    return f"Run {b.id} ({b.campaign_name}) against run {a.id} ({a.campaign_name})"


def tables(x: AcrossRuns) -> list[Table]:
    """One table per benchmark (run B's names), its cells and figures in run A's order."""
    a, b = x.baseline.run.id, x.candidate.run.id
    by_bench: dict[str, list] = {}
    for c in x.comparisons:
        by_bench.setdefault(CellPair.label(c.cell.benchmark), []).append(c)
    judged = x.max_percent is not None
    out = []
    for bench, comps in by_bench.items():
        kind = x.kind(comps[0].cell.benchmark[1])
        header = ["Environment", "Load", "Figure", f"Run {a} (median)", f"Run {b} (median)", "Overhead",
                  "95 % CI", "p", "n", "Verdict"] + ([f"<= {x.max_percent:g} %"] if judged else [])
        rows = []
        for c in comps:
            t = c.test
            ci = t.ci_percent
            cells = [CellPair.label(c.cell.environment), CellPair.label(c.cell.load), c.figure,
                     kind.format(t.baseline_median, c.figure), kind.format(t.candidate_median, c.figure),
                     format_percent(t.overhead_percent),
                     f"{format_percent(ci[0])} .. {format_percent(ci[1])}" if ci else "–",
                     p_text(t),
                     f"{t.n_baseline} vs {t.n_candidate}", t.verdict]
            if judged:
                cells.append(c.status or "–")
            rows.append(Row(cells, (c.status or t.verdict).lower().replace(" ", "-")))
        note = ("Overhead: run B against run A, positive is worse (for times and counts the ratio of the "
                "medians over repetitions - 1, for bandwidths and rates the share lost). 95 % CI by bootstrap "
                "and p by Mann-Whitney U, or (marked \"(t)\") by Welch's t-test on log values when there are "
                "too few repetitions for a rank test. Equivalent: the 90 % interval lies within "
                f"±{x.candidate.spec.equivalence_percent:g} %.")
        if judged:
            note += (f" The last column judges the overhead against {x.max_percent:g} %: PASS when the whole "
                     "95 % interval is at or below it, FAIL when wholly above, INCONCLUSIVE otherwise (or "
                     "with fewer than 3 repetitions per side, or measurement conditions not met).")
        reasons = [f"{CellPair.label(c.cell.environment)} / {CellPair.label(c.cell.load)} / {c.figure}: {c.reason}"
                   for c in comps if c.reason and c.status != "PASS" and (c.status or "conditions" in c.reason)]
        if reasons:
            note += " " + "; ".join(reasons[:10]) + ("; ..." if len(reasons) > 10 else "") + "."
        out.append(Table(f"{bench}: run {b} against run {a}", header, rows, note=note, numeric_from=3,
                         numeric_to=9))
    return out


def unmatched_sentences(x: AcrossRuns) -> list[str]:
    out = []
    for cells, run in ((x.only_baseline, x.baseline.run.id), (x.only_candidate, x.candidate.run.id)):
        if cells:
            shown = ", ".join(f"{e} / {ld} / {bench}" for e, ld, bench in cells[:8])
            more = f" and {len(cells) - 8} more" if len(cells) > 8 else ""
            out.append(f"Only in run {run} (not compared): {shown}{more}.")
    return out + list(x.notes)


def fingerprint_tables(x: AcrossRuns) -> list[Table]:
    """Per environment pair the fingerprint rows that differ between the runs (all key facts shown)."""
    out = []
    for d in x.fingerprints:
        rows = [Row([r.label if r.key_fact else f"`{r.label}`", *r.values], "differs" if r.differs else "same")
                for r in d.rows if r.key_fact or r.differs]
        n = len(d.differing)
        caption = (f"Fingerprint of {d.environments[0]} and {d.environments[1]}: "
                   + (f"{n} row{'s' if n != 1 else ''} differ" if n else "identical in every field recorded"))
        out.append(Table(caption, ["Field", *d.environments], rows,
                         note="Differing rows are highlighted; other recorded fields are equal."))
    return out


def document(x: AcrossRuns) -> dict[str, Any]:
    """The comparison as JSON-ready data."""
    def num(v):
        return None if v is None or v != v else v

    return {
        "baseline_run": x.baseline.run.id, "candidate_run": x.candidate.run.id, "mapping": x.mapping,
        "max_percent": x.max_percent, "metrics": x.metrics, "status": x.status,
        "comparisons": [
            {"benchmark": list(c.cell.benchmark), "environment": list(c.cell.environment),
             "load": list(c.cell.load), "figure": c.figure,
             "n_baseline": c.test.n_baseline, "n_candidate": c.test.n_candidate,
             "baseline_median": num(c.test.baseline_median), "candidate_median": num(c.test.candidate_median),
             "ratio": num(c.test.ratio), "overhead_percent": num(c.test.overhead_percent),
             "ci95_percent": [num(v) for v in c.test.ci_percent] if c.test.ci_percent else None,
             "p_value": num(c.test.p_value), "method": c.test.method, "p_test": c.test.p_test,
             "verdict": c.test.verdict,
             "lower_is_better": c.test.lower_is_better, "status": c.status, "reason": c.reason or None}
            for c in x.comparisons],
        "only_baseline": [list(c) for c in x.only_baseline],
        "only_candidate": [list(c) for c in x.only_candidate],
        "notes": x.notes,
        "fingerprints": [d.to_dict() for d in x.fingerprints],
    }
