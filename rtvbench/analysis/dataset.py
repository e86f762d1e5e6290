"""A campaign run indexed for analysis: ordered names, baselines, figures per measurement.

The campaign dict is the raw parsed TOML with no defaults filled in, so every
lookup here tolerates missing tables and keys, and names found only in the
measurements (e.g. a campaign edited after the run) are still analysed.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from rtvbench.analysis.kinds import Kind, get_kind
from rtvbench.analysis.metrics import measurement_figures
from rtvbench.results import CampaignRun, Measurement

#: measurements whose figures describe a complete run; interrupted ones cover only part of it
COMPLETE = ("ok",)


def _table(campaign: dict[str, Any], key: str) -> dict[str, Any]:
    value = campaign.get(key)
    return value if isinstance(value, dict) else {}


def _ordered(declared: list[str], seen: list[str]) -> list[str]:
    out = list(declared)
    for name in seen:
        if name not in out:
            out.append(name)
    return out


class RunData:
    """Read-only view of a CampaignRun that analysis modules share."""

    def __init__(self, run: CampaignRun):
        self.run = run
        self.campaign = run.campaign if isinstance(run.campaign, dict) else {}
        self._figures: dict[int, dict[str, float]] = {}

    @cached_property
    def environments(self) -> list[str]:
        return _ordered(list(_table(self.campaign, "environments")),
                        [m.environment for m in self.run.measurements])

    @cached_property
    def loads(self) -> list[str]:
        return _ordered(list(_table(self.campaign, "loads")), [m.load for m in self.run.measurements])

    @cached_property
    def benchmarks(self) -> list[str]:
        return _ordered(list(_table(self.campaign, "benchmarks")), [m.benchmark for m in self.run.measurements])

    @property
    def baseline_environment(self) -> str | None:
        """Environments are compared with the first one declared, as the campaign author ordered them."""
        return self.environments[0] if self.environments else None

    @cached_property
    def baseline_load(self) -> str | None:
        """Loads are compared with `idle` if there is one, else the first load without keys (no load), else the first."""
        if not self.loads:
            return None
        if "idle" in self.loads:
            return "idle"
        for name in self.loads:
            if self.load_table(name) == {} and name in _table(self.campaign, "loads"):
                return name
        return self.loads[0]

    def environment_table(self, name: str) -> dict[str, Any]:
        t = _table(self.campaign, "environments").get(name)
        return t if isinstance(t, dict) else {}

    def load_table(self, name: str) -> dict[str, Any]:
        t = _table(self.campaign, "loads").get(name)
        return t if isinstance(t, dict) else {}

    def benchmark_table(self, name: str) -> dict[str, Any]:
        t = _table(self.campaign, "benchmarks").get(name)
        return t if isinstance(t, dict) else {}

    def kind_name(self, bench: str) -> str | None:
        kind = self.benchmark_table(bench).get("kind")
        if isinstance(kind, str):
            return kind
        for m in self.run.measurements:
            if m.benchmark == bench:
                return m.kind
        return None

    def kind(self, bench: str) -> Kind | None:
        name = self.kind_name(bench)
        return get_kind(name) if name else None

    @cached_property
    def repetitions(self) -> int | None:
        r = self.campaign.get("repetitions")
        return r if isinstance(r, int) else None

    def measurements(self, environment: str | None = None, load: str | None = None,
                     benchmark: str | None = None, statuses: tuple[str, ...] | None = None) -> list[Measurement]:
        out = [m for m in self.run.measurements
               if (environment is None or m.environment == environment)
               and (load is None or m.load == load)
               and (benchmark is None or m.benchmark == benchmark)
               and (statuses is None or m.status in statuses)]
        return sorted(out, key=lambda m: (m.repetition, m.id))

    def figures(self, m: Measurement) -> dict[str, float]:
        if m.id not in self._figures:
            self._figures[m.id] = measurement_figures(m)
        return self._figures[m.id]

    def values(self, environment: str, load: str, benchmark: str, figure: str,
               statuses: tuple[str, ...] = COMPLETE) -> list[float]:
        """The figure of every matching repetition that has it, in repetition order."""
        out = []
        for m in self.measurements(environment, load, benchmark, statuses):
            v = self.figures(m).get(figure)
            if v is not None:
                out.append(float(v))
        return out

    def cells(self, benchmark: str) -> list[tuple[str, str]]:
        """(environment, load) pairs that have at least one measurement of the benchmark, in report order."""
        present = {(m.environment, m.load) for m in self.run.measurements if m.benchmark == benchmark}
        return [(e, ld) for e in self.environments for ld in self.loads if (e, ld) in present]

    def figure_names(self, benchmark: str) -> list[str]:
        """Every figure any measurement of the benchmark has, in a stable order."""
        names: dict[str, None] = {}
        for m in self.measurements(benchmark=benchmark):
            for f in self.figures(m):
                names.setdefault(f, None)
        return sorted(names)
