"""One run against another: the same cells measured twice (this month's BSP against last month's,
board A on Monday against board B on Friday), compared with the machinery a run uses between its own
environments.

Cells are matched by environment, load and benchmark name; a mapping renames run A's names to run B's
where they differ (`native=board_b`). A benchmark is compared only with one of the same kind; when its
parameters differ, or a load's do, the comparison is still made and says so, since the difference is
then the parameters' as much as the platform's. Each figure a kind compares between environments is
compared here (rtvbench.analysis.compare: ratio of medians over repetitions, its interval, the
verdict), with the candidate run's equivalence margin. With a bound (`max_percent`), each comparison
is also judged as a relative requirement is: PASS when the whole 95 % interval of the overhead is at or
below it, FAIL when it is wholly above, INCONCLUSIVE otherwise or when either cell's measurement
conditions were not met. The environments' fingerprints are diffed pairwise, run A's against run B's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rtvbench.analysis.compare import RatioTest, ratio_test
from rtvbench.analysis.conditions import cell_conditions
from rtvbench.analysis.dataset import RunData
from rtvbench.analysis.fingerprint import FingerprintDiff, fingerprint_diff
from rtvbench.analysis.requirements import INCONCLUSIVE, overhead_status, worst
from rtvbench.errors import InputError


@dataclass
class CellPair:
    """The same cell in both runs: names in run A (baseline) and in run B (candidate)."""
    benchmark: tuple[str, str]
    environment: tuple[str, str]
    load: tuple[str, str]

    @staticmethod
    def label(names: tuple[str, str]) -> str:
        """"native", or "native -> board_b" when the runs name it differently."""
        return names[0] if names[0] == names[1] else f"{names[0]} -> {names[1]}"


@dataclass
class RunComparison:
    """One figure of one cell pair."""
    cell: CellPair
    figure: str
    test: RatioTest
    status: str | None = None       # PASS | FAIL | INCONCLUSIVE against the bound; None without one
    reason: str = ""                # why the status, or why the cells' conditions make it unreliable


@dataclass
class AcrossRuns:
    baseline: RunData               # run A
    candidate: RunData              # run B
    mapping: dict[str, str]         # run A's names -> run B's, as given
    comparisons: list[RunComparison]
    only_baseline: list[tuple[str, str, str]]     # (environment, load, benchmark) measured in A only
    only_candidate: list[tuple[str, str, str]]
    notes: list[str]                # benchmarks not comparable, parameters that differ
    fingerprints: list[FingerprintDiff]           # one per matched environment pair
    max_percent: float | None = None
    metrics: list[str] = field(default_factory=list)   # the figures selected ("bench.figure"); [] = all

    @property
    def status(self) -> str | None:
        """The worst status over the judged comparisons; None without a bound."""
        if self.max_percent is None:
            return None
        return worst([c.status for c in self.comparisons if c.status]) if self.comparisons else INCONCLUSIVE

    def kind(self, benchmark: str):
        return self.candidate.kind(benchmark)


def _apply(mapping: dict[str, str], names: list[str]) -> dict[str, str]:
    return {n: mapping.get(n, n) for n in names}


def check_mapping(a: RunData, b: RunData, mapping: dict[str, str]) -> None:
    """Every renamed name must exist in the run it names: a typo would otherwise silently match nothing."""
    a_names = set(a.environments) | set(a.loads) | set(a.benchmarks)
    b_names = set(b.environments) | set(b.loads) | set(b.benchmarks)
    for old, new in mapping.items():
        if old not in a_names:
            raise InputError(f"--map {old}={new}: run {a.run.id} has no environment, load or benchmark "
                             f"named {old!r}; `rtvbench show {a.run.id}` lists its names.")
        if new not in b_names:
            raise InputError(f"--map {old}={new}: run {b.run.id} has no environment, load or benchmark "
                             f"named {new!r}; `rtvbench show {b.run.id}` lists its names.")


def _param_changes(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    return [f"{k} {a.get(k)!r} -> {b.get(k)!r}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def _selected(metrics: list[str], bench: str, figure: str) -> bool:
    return not metrics or f"{bench}.{figure}" in metrics


def compare_runs(a: RunData, b: RunData, mapping: dict[str, str] | None = None,
                 max_percent: float | None = None, metrics: list[str] | None = None) -> AcrossRuns:
    """Run B (candidate) against run A (baseline); see the module's note."""
    mapping = dict(mapping or {})
    metrics = list(metrics or [])
    check_mapping(a, b, mapping)
    envs, loads, benches = (_apply(mapping, a.environments), _apply(mapping, a.loads),
                            _apply(mapping, a.benchmarks))
    comps: list[RunComparison] = []
    only_a, notes, matched_b, env_pairs = [], [], set(), {}
    for bench_a in a.benchmarks:
        bench_b = benches[bench_a]
        if bench_b not in b.benchmarks:
            only_a += [(e, ld, bench_a) for e, ld in a.cells(bench_a)]
            continue
        kind_a, kind_b = a.kind_name(bench_a), b.kind_name(bench_b)
        kind = b.kind(bench_b)
        if kind_a != kind_b or kind is None:
            notes.append(f"Benchmark `{CellPair.label((bench_a, bench_b))}` is not compared: it is of kind "
                         f"`{kind_a}` in run {a.run.id} and `{kind_b}` in run {b.run.id}."
                         if kind_a != kind_b else
                         f"Benchmark `{bench_b}` is not compared: rtvbench cannot analyse its kind `{kind_b}`.")
            only_a += [(e, ld, bench_a) for e, ld in a.cells(bench_a)]
            continue
        changes = _param_changes(a.benchmark_params(bench_a), b.benchmark_params(bench_b))
        if changes:
            notes.append(f"Benchmark `{CellPair.label((bench_a, bench_b))}` ran with other parameters in run "
                         f"{b.run.id} ({'; '.join(changes)}): its differences are the parameters' as much as "
                         "the platform's.")
        figures = kind.compared_figures(sorted(set(a.figure_names(bench_a)) & set(b.figure_names(bench_b))))
        b_cells = set(b.cells(bench_b))
        for env_a, load_a in a.cells(bench_a):
            env_b, load_b = envs[env_a], loads[load_a]
            if (env_b, load_b) not in b_cells:
                only_a.append((env_a, load_a, bench_a))
                continue
            matched_b.add((env_b, load_b, bench_b))
            env_pairs.setdefault((env_a, env_b), None)
            pair = CellPair((bench_a, bench_b), (env_a, env_b), (load_a, load_b))
            unclean = [c.reason() for c in (cell_conditions(a, env_a, load_a, bench_a),
                                            cell_conditions(b, env_b, load_b, bench_b)) if not c.ok]
            for figure in figures:
                if not _selected(metrics, bench_b, figure):
                    continue
                t = ratio_test(a.values(env_a, load_a, bench_a, figure), b.values(env_b, load_b, bench_b, figure),
                               margin_percent=b.spec.equivalence_percent,
                               lower_is_better=kind.lower_is_better(figure))
                c = RunComparison(pair, figure, t)
                if unclean:
                    c.reason = "measurement conditions not met: " + "; ".join(unclean)
                if max_percent is not None:
                    if unclean:
                        c.status = INCONCLUSIVE
                    else:
                        c.status, c.reason = overhead_status(t, max_percent, figure)
                comps.append(c)
    only_b = [(e, ld, bench) for bench in b.benchmarks for e, ld in b.cells(bench)
              if (e, ld, bench) not in matched_b]
    for load_a, load_b in loads.items():
        la, lb = a.load(load_a), b.load(load_b)
        if la is not None and lb is not None and load_b in b.loads:
            changes = _param_changes({"kind": la.kind, "where": la.where, **la.params},
                                     {"kind": lb.kind, "where": lb.where, **lb.params})
            if changes:
                notes.append(f"Load `{CellPair.label((load_a, load_b))}` differs in run {b.run.id} "
                             f"({'; '.join(changes)}).")
    if a.spec.equivalence_percent != b.spec.equivalence_percent:
        notes.append(f"The runs' equivalence margins differ ({a.spec.equivalence_percent:g} % and "
                     f"{b.spec.equivalence_percent:g} %); run {b.run.id}'s is used.")
    return AcrossRuns(a, b, mapping, comps, only_a, only_b, notes,
                      [d for d in (_fingerprint_pair(a, b, ea, eb) for ea, eb in env_pairs) if d is not None],
                      max_percent, metrics)


def run_label(data: RunData, env: str) -> str:
    """An environment of a run, as a fingerprint column names it: "run 3: native"."""
    return f"run {data.run.id}: {env}"


def _fingerprint_pair(a: RunData, b: RunData, env_a: str, env_b: str) -> FingerprintDiff | None:
    la, lb = run_label(a, env_a), run_label(b, env_b)
    sysinfo, describe, meta = {}, {}, {}
    for data, env, label in ((a, env_a, la), (b, env_b, lb)):
        run = data.run
        for into, source in ((sysinfo, run.fingerprints), (describe, getattr(run, "targets", None)),
                             (meta, getattr(run, "fingerprint_meta", None))):
            if source and env in source:
                into[label] = source[env]
    return fingerprint_diff([la, lb], sysinfo, describe, meta)
