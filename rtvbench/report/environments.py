"""Report parts about the environments: the fingerprint diff, the preflight warnings, the 002-style table of
wake-up latency per environment (Table 5.2) and the 002-style percent-overhead tables (Tables 5.3-5.6).

The numbers come from rtvbench.analysis (fingerprint, per_environment, compare) and rtvbench.preflight;
this module only lays them out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from rtvbench.analysis.compare import Comparison
from rtvbench.analysis.evaluation import Evaluation
from rtvbench.analysis.fingerprint import FingerprintDiff, fingerprint_diff
from rtvbench.analysis.per_environment import latency_by_environment
from rtvbench.analysis.units import format_percent, format_time
from rtvbench.preflight import PreflightWarning, check, observed_privileges
from rtvbench.report.model import Row, Table


@dataclass
class FingerprintView:
    table: Table
    equal_fields: list[tuple[str, str]] = field(default_factory=list)   # collapsed: same everywhere
    differing: int = 0


def diff(ev: Evaluation) -> FingerprintDiff | None:
    run = ev.data.run
    seen = observed_privileges(run.measurements)
    granted = {}
    for env, o in seen.items():
        if o.rt_requested:
            granted[env] = (f"real-time priority granted in all {o.rt_requested} measurements" if not o.rt_refused
                            else f"real-time priority refused in {o.rt_refused} of {o.rt_requested} measurements")
    return fingerprint_diff(ev.data.environments, run.fingerprints or {}, getattr(run, "targets", None),
                            getattr(run, "fingerprint_meta", None), granted)


def preflight(ev: Evaluation) -> list[PreflightWarning]:
    """The runner's preflight warnings, recomputed from the stored campaign and fingerprints, with what the
    measurements reported about real-time priority and mlockall in place of the guess."""
    run = ev.data.run
    targets = getattr(run, "targets", None) or {}
    metas = getattr(run, "fingerprint_meta", None) or {}
    prints = {env: (targets.get(env) or {}, run.fingerprints.get(env) or {}, metas.get(env) or {})
              for env in run.fingerprints or {}}
    return check(ev.data.campaign, prints, observed_privileges(run.measurements))


def fingerprint_view(ev: Evaluation) -> FingerprintView | None:
    d = diff(ev)
    if d is None:
        return None
    several = len(d.environments) > 1
    rows, equal = [], []
    for r in d.rows:
        if r.key_fact or r.differs:
            label = r.label if r.key_fact else f"`{r.label}`"
            rows.append(Row([label, *r.values], "differs" if r.differs else ("same" if several else "")))
        else:
            equal.append((r.label, r.values[0]))
    n = len(d.differing)
    if several:
        caption = (f"Environment fingerprints: {n} row{'s' if n != 1 else ''} differ{'s' if n == 1 else ''} "
                   "(highlighted)" if n else "Environment fingerprints: identical in every field recorded")
        note = ("Rows whose values differ between environments are highlighted; the key facts that are equal "
                "everywhere are greyed.")
    else:
        caption, note = "Environment fingerprint", ""
    if equal:
        note += (" " if note else "") + (f"{len(equal)} more recorded field{'s' if len(equal) != 1 else ''}"
                                         + (" equal in every environment" if several else "")
                                         + " are listed below the table.")
    table = Table(caption, ["Field", *d.environments], rows, note=note)
    return FingerprintView(table, equal, n)


# ---------------------------------------------------------------------------
# Reference 002 tables


def latency_environment_table(ev: Evaluation, bench: str):
    """Table 5.2 of reference 002: minimum, average and maximum wake-up latency per environment (with
    the load as a second column when the benchmark ran under several)."""
    data = ev.data
    rows = latency_by_environment(data, bench)
    envs = {r.environment for r in rows}
    if len(envs) < 2:
        return None
    loads = list(dict.fromkeys(r.load for r in rows))
    with_load = len(loads) > 1
    header = ["Environment"] + (["Load"] if with_load else []) + [
        "Minimum latency (us)", "Average latency (us)", "Maximum latency (us)", "Samples"]
    out = []
    for r in sorted(rows, key=lambda r: (loads.index(r.load), data.environments.index(r.environment)
                                         if r.environment in data.environments else 99)):
        out.append(Row([r.environment] + ([r.load] if with_load else [])
                       + [_us(r.min_us), _us(r.avg_us), _us(r.max_us), f"{r.samples:,}"],
                       "" if r.repetitions else "failed"))
    t = data.benchmark_table(bench)
    how = []
    if t.get("loops"):
        how.append(f"{t['loops']:,} loops per CPU" if isinstance(t["loops"], int) else f"{t['loops']} loops")
    elif t.get("duration_s"):
        how.append(f"{t['duration_s']} s per repetition")
    if t.get("interval_us"):
        how.append(f"an interval of {t['interval_us']} us")
    policy = t.get("policy", "fifo")
    how.append(f"priority {t.get('priority', 80)} ({policy})" if policy != "other" else "normal priority")
    return Table(f"{bench}: wake-up latency per environment, {', '.join(how)}", header, out,
                 numeric_from=2 if with_load else 1,
                 note="Over every sample of the completed repetitions: the smallest and the largest of any "
                      "repetition, and the mean of all samples (reference 002, Table 5.2).")


def _us(v: float | None) -> str:
    if v is None:
        return "–"
    # Whole microseconds with separators from 1000 us on, as the reference prints 50,835.
    return f"{v:,.0f}" if abs(v) >= 1000 else format_time(v, "us")


def overhead_tables(ev: Evaluation, bench: str, kind) -> list:
    """One table per compared pair (a candidate environment against the baseline under one load, or a load
    against the baseline load in one environment): per figure the baseline and candidate mean ± sd, the
    difference of the medians, the percent overhead with its bootstrap 95 % interval, the Mann-Whitney p and
    the verdict (reference 002, Tables 5.3-5.6)."""
    comps: dict[tuple, list[Comparison]] = {}
    for c in ev.comparisons:
        if c.benchmark == bench:
            comps.setdefault((c.axis, c.context, c.baseline, c.candidate), []).append(c)
    order = list(kind.comparison_figures) if kind is not None else []
    out = []
    data = ev.data

    def place(names: list[str], name: str) -> int:
        return names.index(name) if name in names else len(names)

    def key(kv):
        axis, context, _, candidate = kv[0]
        # Environment comparisons first, each axis in the campaign's declared order.
        if axis == "environment":
            return (0, place(data.loads, context), place(data.environments, candidate))
        return (1, place(data.environments, context), place(data.loads, candidate))
    for (axis, context, baseline, candidate), cs in sorted(comps.items(), key=key):
        first = cs[0]
        base_cell = (first.baseline_environment, first.baseline_load)
        cand_cell = (first.candidate_environment, first.candidate_load)
        if axis == "environment":
            caption = f"{bench}: `{candidate}` against the baseline `{baseline}`, both under `{context}`"
        else:
            caption = f"{bench}: load `{candidate}` against `{baseline}`, both in `{context}`"
        header = ["Figure", f"{base_cell[0]} / {base_cell[1]} (us, mean ± sd)",
                  f"{cand_cell[0]} / {cand_cell[1]} (us, mean ± sd)", "Δ median (us)", "Overhead", "95 % CI",
                  "p (Mann-Whitney)", "n", "Verdict"]
        rows = []
        for c in sorted(cs, key=lambda c: order.index(c.figure) if c.figure in order else 99):
            t = c.test
            b = ev.summary(*base_cell, bench, c.figure)
            a = ev.summary(*cand_cell, bench, c.figure)
            delta = (t.candidate_median - t.baseline_median
                     if t.baseline_median is not None and t.candidate_median is not None else None)
            ci = t.ci_percent
            rows.append(Row([kind.label(c.figure) if kind else c.figure, _mean_sd(b, c.figure),
                             _mean_sd(a, c.figure),
                             "–" if delta is None else ("+" if delta > 0 else "") + format_time(delta, _unit(c.figure)),
                             format_percent(t.overhead_percent),
                             f"{format_percent(ci[0])} .. {format_percent(ci[1])}" if ci else "–",
                             f"{t.p_value:.3g}" if t.p_value is not None else "–",
                             f"{t.n_baseline} vs {t.n_candidate}", t.verdict],
                            t.verdict.replace(" ", "-")))
        out.append(Table(caption, header, rows, numeric_from=1, numeric_to=8,
                         note="Mean ± sample standard deviation over repetitions (reference 002 style). Δ and "
                              "overhead compare the medians (overhead = median(candidate) / median(baseline) - 1); "
                              "95 % CI by bootstrap (5000 resamples); significant when Mann-Whitney p < 0.05 and "
                              "the CI excludes 0 %."))
    return out


def _unit(figure: str) -> str:
    unit = figure.rpartition("_")[2]
    return unit if unit in ("ns", "us", "ms") else "us"


def _mean_sd(s, figure: str) -> str:
    if s is None or s.mean is None:
        return "–"
    unit = _unit(figure)
    if s.stddev is None:
        return format_time(s.mean, unit)
    return f"{format_time(s.mean, unit)} ± {format_time(s.stddev, unit)}"
