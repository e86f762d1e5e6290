"""Figures against the number of VMs (latency against the number of VMs, 1..5).

A campaign that declares the same guest several times with a different `count` (the number of
guests booted together; the benchmark runs in the first, `where = "neighbours"` loads in the
others) asks how a figure grows with the number of VMs. Environments belong to one series when
their tables are equal but for `count`; a series needs at least two counts to be a curve. The
first environment that is no guest (the machine itself, local or over ssh) is the 0-VM point of
every series: what the figure is without virtualisation.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median

from rtvbench.analysis.dataset import COMPLETE, RunData
from rtvbench.analysis.run_analysis import RUN_ANALYSES, RunAnalysis
from rtvbench.run_analyses.host_usage.analysis import measurement_host_usage


@dataclass
class ScalingPoint:
    count: int
    environment: str
    median: float
    low: float                  # min over the repetitions
    high: float                 # max over the repetitions
    n: int


@dataclass
class ScalingSeries:
    benchmark: str
    figure: str
    load: str
    points: list[ScalingPoint]          # by count, ascending


def scaled_environments(data: RunData) -> list[list[tuple[int, str]]]:
    """(count, environment) lists of environments equal but for `count`, with >= 2 counts."""
    by_shape: dict[str, list[tuple[int, str]]] = {}
    for env in data.environments:
        spec = data.environment(env)
        if spec is None or "count" not in spec.params:
            continue                    # only targets that boot several guests have a count
        shape = repr((spec.target, sorted((k, repr(v)) for k, v in spec.params.items() if k != "count")))
        by_shape.setdefault(shape, []).append((spec.guests, env))
    return [sorted(g) for g in by_shape.values() if len({c for c, _ in g}) >= 2]


def scaling_series(data: RunData, bench: str) -> list[ScalingSeries]:
    """One series per (compared figure, load) of a benchmark, for every group of environments
    that differ only in their number of VMs."""
    kind = data.kind(bench)
    if kind is None:
        return []
    groups = scaled_environments(data)
    if not groups:
        return []
    present = sorted({f for m in data.measurements(benchmark=bench) for f in data.figures(m)})
    native = next((env for env in data.environments
                   if (spec := data.environment(env)) is not None and "count" not in spec.params), None)
    out = []
    for group in groups:
        group = ([(0, native)] if native else []) + group
        for figure in kind.compared_figures(present):
            for load in data.loads:
                points = []
                for count, env in group:
                    values = [v for v in data.values(env, load, bench, figure, COMPLETE) if v is not None]
                    if values:
                        points.append(ScalingPoint(count, env, median(values), min(values), max(values),
                                                   len(values)))
                if len({p.count for p in points}) >= 2:
                    out.append(ScalingSeries(bench, figure, load, points))
    return out


def host_scaling(data: RunData, bench: str) -> list[tuple[str, str, list[tuple[int, float, float, float]]]]:
    """What all the guests together cost the host against the number of VMs, for the groups of
    environments that differ only in `count`: (load, "cpu" | "pss", points), a
    point (count, median, min, max) over the completed repetitions of the total CPU % of one host CPU,
    or of QEMU's PSS summed over the guests in MiB."""
    out = []
    for group in scaled_environments(data):
        for load in data.loads:
            for what in ("cpu", "pss"):
                points = []
                for count, env in group:
                    totals = []
                    for m in data.measurements(env, load, bench, COMPLETE):
                        usage = measurement_host_usage(m)
                        if len(usage) == count:         # every guest through the whole measurement
                            totals.append(sum(u.total_percent for u in usage) if what == "cpu"
                                          else sum(u.pss_mib or 0 for u in usage))
                    if totals:
                        points.append((count, median(totals), min(totals), max(totals)))
                if len(points) >= 2:
                    out.append((load, what, points))
    return out


@dataclass(frozen=True)
class VmScaling:
    """Per benchmark: its compared figures against the number of VMs, and what all the guests together
    cost the host against it ((load, "cpu" | "pss", points), host_scaling)."""
    series: dict[str, list[ScalingSeries]]
    host: dict[str, list[tuple[str, str, list[tuple[int, float, float, float]]]]]


def vm_scaling(data: RunData, around: object = None) -> VmScaling | None:
    """None when no environments differ only in `count`."""
    if not scaled_environments(data):
        return None
    return VmScaling({b: scaling_series(data, b) for b in data.benchmarks},
                     {b: host_scaling(data, b) for b in data.benchmarks})


VM_SCALING: RunAnalysis[VmScaling] = RUN_ANALYSES.register("vm_scaling")(RunAnalysis("vm_scaling", vm_scaling))
