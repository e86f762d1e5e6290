"""A campaign run indexed for analysis: ordered names, baselines, typed results per measurement.

Everything about the campaign comes from the run's resolved spec (every default filled in, as
validated when it ran); names found only in the measurements (a spec that could not be read) are
still analysed, in the order they were measured.
"""

from __future__ import annotations

import math
import re
from functools import cached_property
from typing import Any

from rtvbench.analysis.kind import Kind, Result, get_kind
from rtvbench.results import CampaignRun, Measurement
from rtvbench.spec import BenchmarkSpec, CampaignSpec, EnvironmentSpec, LoadSpec

#: measurements whose figures describe a complete run; interrupted ones cover only part of it
COMPLETE = ("ok",)


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _ordered(declared: list[str], seen: list[str]) -> list[str]:
    out = list(declared)
    for name in seen:
        if name not in out:
            out.append(name)
    return out


def natural_order(name: str) -> tuple:
    """A sort key that orders the digit runs of a name by their value and the rest as text."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", name))


class RunData:
    """Read-only view of a CampaignRun that analysis modules share."""

    def __init__(self, run: CampaignRun):
        self.run = run
        self.spec = run.spec or CampaignSpec(run.campaign_name, 0, 0, {}, {}, {})
        self._results: dict[int, Result] = {}
        #: measurement id -> why its records could not be decoded (a run stored before the host checked
        #: every record, or a store edited by hand): such a measurement has no figures
        self.unreadable: dict[int, str] = {}

    @cached_property
    def environments(self) -> list[str]:
        return _ordered(list(self.spec.environments), [m.environment for m in self.run.measurements])

    @cached_property
    def loads(self) -> list[str]:
        return _ordered(list(self.spec.loads), [m.load for m in self.run.measurements])

    @cached_property
    def benchmarks(self) -> list[str]:
        return _ordered(list(self.spec.benchmarks), [m.benchmark for m in self.run.measurements])

    @property
    def baseline_environment(self) -> str | None:
        """Environments are compared with the first one declared, as the campaign author ordered them."""
        return self.environments[0] if self.environments else None

    @cached_property
    def baseline_load(self) -> str | None:
        """Loads are compared with `idle` if there is one, else the first load that is no load, else the first."""
        if not self.loads:
            return None
        if "idle" in self.loads:
            return "idle"
        return next((ld.name for ld in self.spec.loads.values() if ld.is_idle), self.loads[0])

    def environment(self, name: str) -> EnvironmentSpec | None:
        return self.spec.environments.get(name)

    def load(self, name: str) -> LoadSpec | None:
        return self.spec.loads.get(name)

    def benchmark(self, name: str) -> BenchmarkSpec | None:
        return self.spec.benchmarks.get(name)

    def environment_table(self, name: str) -> dict[str, Any]:
        """An environment's target and every parameter that has a value, for display."""
        e = self.environment(name)
        return {"target": e.target, **{k: v for k, v in e.params.items() if v is not None}} if e else {}

    def benchmark_params(self, name: str) -> dict[str, Any]:
        """A benchmark's parameters, defaults filled in ({} when the run's spec does not have it)."""
        b = self.benchmark(name)
        return dict(b.params) if b else {}

    def kind_name(self, bench: str) -> str | None:
        b = self.benchmark(bench)
        if b is not None:
            return b.kind
        for m in self.run.measurements:
            if m.benchmark == bench:
                return m.kind
        return None

    def kind(self, bench: str) -> Kind | None:
        name = self.kind_name(bench)
        return get_kind(name) if name else None

    @property
    def repetitions(self) -> int | None:
        return self.spec.repetitions or None

    @cached_property
    def rounds(self) -> int | None:
        """A soak's rounds, each measuring every cell once (the campaign's `repetitions` is not used);
        None for a run that is no soak. A soak is the run with health checks (`rtvbench soak`)."""
        if not self.run.health:
            return None
        return len({m.repetition for m in self.run.measurements}) or None

    @property
    def requirements(self) -> list[dict[str, Any]]:
        return list(self.spec.requirements)

    def measurements(self, environment: str | None = None, load: str | None = None,
                     benchmark: str | None = None, statuses: tuple[str, ...] | None = None) -> list[Measurement]:
        out = [m for m in self.run.measurements
               if (environment is None or m.environment == environment)
               and (load is None or m.load == load)
               and (benchmark is None or m.benchmark == benchmark)
               and (statuses is None or m.status in statuses)]
        # Within a repetition in the plan's order, as the run lists them (a stable sort): not by id,
        # which follows whichever lane of a concurrent run started first.
        return sorted(out, key=lambda m: m.repetition)

    def result(self, m: Measurement) -> Result:
        """The measurement decoded by its kind (empty for unknown kinds and for no results)."""
        if m.id not in self._results:
            kind = get_kind(m.kind)
            try:
                result = kind.decode(m) if kind is not None and m.results else Result()
                odd = sorted(k for k, v in result.figures.items() if not _finite(v))
                if odd:
                    raise ValueError(f"{', '.join(odd[:3])} not a number")
            except (TypeError, ValueError, KeyError, AttributeError, ArithmeticError) as e:
                result = Result()
                self.unreadable[m.id] = f"{type(e).__name__}: {e}"
            self._results[m.id] = result
        return self._results[m.id]

    def figures(self, m: Measurement) -> dict[str, float]:
        return self.result(m).figures

    def values(self, environment: str, load: str, benchmark: str, figure: str,
               statuses: tuple[str, ...] = COMPLETE) -> list[float]:
        """The figure of every matching repetition that has it, in repetition order; of a figure that
        summarises runs the tool made itself, each of those runs' values (Result.runs)."""
        out = []
        for m in self.measurements(environment, load, benchmark, statuses):
            result = self.result(m)
            runs = result.runs.get(figure)
            if runs:
                out.extend(runs)
                continue
            v = result.figures.get(figure)
            if v is not None:
                out.append(float(v))
        return out

    def cells(self, benchmark: str) -> list[tuple[str, str]]:
        """(environment, load) pairs that have at least one measurement of the benchmark, in report order."""
        present = {(m.environment, m.load) for m in self.run.measurements if m.benchmark == benchmark}
        return [(e, ld) for e in self.environments for ld in self.loads if (e, ld) in present]

    def figure_names(self, benchmark: str) -> list[str]:
        """Every figure any measurement of the benchmark has, or printed as no value (Kind.not_values:
        its row then says why it has none), in a stable order: numbers in a name by their value (`16B`
        before `1024B`, `cpu2` before `cpu10`)."""
        names: dict[str, None] = {}
        kind = self.kind(benchmark)
        for m in self.measurements(benchmark=benchmark):
            for f in self.figures(m):
                names.setdefault(f, None)
            for f in kind.not_values(m) if kind is not None else ():
                names.setdefault(f, None)
        return sorted(names, key=natural_order)
