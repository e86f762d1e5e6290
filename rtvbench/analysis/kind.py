"""What analysis knows of a benchmark kind: the figures its probe records yield and how to read them.

Each kind's rtvbench/kinds/<kind>/decode.py defines a `Kind` subclass and registers it (loaded on
the first lookup), so that adding a kind never means editing metrics, stats or the report. The
measurement-suite kinds share their figure conventions through `analysis.quantities.QuantityKind`.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable

from rtvbench.units import format_value, suffix_unit
from rtvbench.kinds import load
from rtvbench.results import Measurement

_CPU_FIGURE = re.compile(r"^cpu(\d+)\.(.+)$")


def cpu_figure(cpu: int, figure: str) -> str:
    """The name of a figure of one CPU: `cpu1.max_us` (metric `wakeup.cpu1.max_us`)."""
    return f"cpu{cpu}.{figure}"


def split_cpu(name: str) -> tuple[int | None, str]:
    """(CPU, figure) of a per-CPU figure name, (None, name) for a merged one."""
    m = _CPU_FIGURE.match(name)
    return (int(m.group(1)), m.group(2)) if m else (None, name)


def record_count(r: dict[str, Any] | None) -> int | None:
    """A record's `count`, when it is an integer."""
    n = r.get("count") if isinstance(r, dict) else None
    return n if isinstance(n, int) and not isinstance(n, bool) else None


def decode_per_cpu(m: Measurement, figures: Callable[[dict[str, Any]], dict[str, float]],
                   distributions: Callable[[dict[str, Any]], dict[str, Any]]) -> "Result":
    """The result of a kind whose probe prints a result per CPU and a merged `cpu: "all"` one: the merged
    figures, each CPU's as `cpu<N>.<figure>`, the sample counts, the merged record's named distributions
    and each CPU's main one (the first its record yields)."""
    out = Result(per_cpu_figures(m, figures))
    for r in m.results:
        cpu = r.get("cpu")
        if cpu == "all":
            out.samples = record_count(r)
            out.distributions.update({name: h for name, h in distributions(r).items() if h is not None and h.total})
        elif _is_cpu(cpu):
            if record_count(r) is not None:
                out.cpu_samples[cpu] = record_count(r)
            main = next(iter(distributions(r).values()), None)
            if main is not None and main.total:
                out.cpu_distributions[cpu] = main
    return out


def per_cpu_figures(m: Measurement, figures: Callable[[dict[str, Any]], dict[str, float]]) -> dict[str, float]:
    """The figures `decode_per_cpu` gives a measurement, in its order, without parsing a distribution."""
    out: dict[str, float] = {}
    for r in m.results:
        cpu = r.get("cpu")
        if cpu == "all":
            out.update(figures(r))
        elif _is_cpu(cpu):
            out.update({cpu_figure(cpu, k): v for k, v in figures(r).items()})
    return out


def _is_cpu(cpu: Any) -> bool:
    return isinstance(cpu, int) and not isinstance(cpu, bool) and cpu >= 0


@dataclass
class Result:
    """One measurement decoded: what generic analysis and report read instead of probe records.

    `figures` holds the merged figures (over every CPU the measurement ran on) and, for kinds that
    measure per CPU, each CPU's own under `cpu<N>.<figure>`; units and direction come from the kind
    (`Kind.unit`, `Kind.lower_is_better`)."""

    figures: dict[str, float] = field(default_factory=dict)
    # The distributions are analysis.histogram.Histogram, not imported here: the histogram parser takes
    # numpy, which `show`, reading figures only (Kind.all_figures), starts without.
    #: samples the merged figures rest on, and each CPU's (kinds that count samples)
    samples: int | None = None
    cpu_samples: dict[int, int] = field(default_factory=dict)
    #: named distributions of the merged result ("wake-up", "response", "unix 64 B" ...)
    distributions: dict[str, Any] = field(default_factory=dict)
    #: the main distribution of each CPU
    cpu_distributions: dict[int, Any] = field(default_factory=dict)
    #: time series: name -> [(end of the window in s, value)], e.g. the largest wake-up per window
    series: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    #: figure -> the value of each independent run it summarises, where the tool made several runs
    #: itself (hyperfine's runs of a command): the statistics over repetitions read these instead
    #: of the figure's one value (RunData.values)
    runs: dict[str, list[float]] = field(default_factory=dict)

    @property
    def cpus(self) -> list[int]:
        return sorted({c for c in (split_cpu(f)[0] for f in self.figures) if c is not None}
                      | set(self.cpu_samples))


class Kind(ABC):
    """What analysis and report need to know about one benchmark kind."""

    name: str = ""
    #: figures shown per repetition in the result table, in column order
    table_figures: tuple[str, ...] = ()
    #: figures compared between environments and between loads
    comparison_figures: tuple[str, ...] = ()
    #: figures ordered from the body of the distribution to its tail, for the consideration
    tail_figures: tuple[str, ...] = ()

    #: whether the probe measures it per CPU (figures `cpu<N>.<figure>` beside the merged ones)
    per_cpu: bool = False

    def decode(self, m: Measurement) -> Result:
        """The measurement as a typed result; kinds with per-CPU figures, distributions or time
        series override this, the others only say what `figures` are."""
        dist = self.histogram(m)
        return Result(self.figures(m), self.sample_count(m), distributions={"": dist} if dist else {})

    @abstractmethod
    def figures(self, m: Measurement) -> dict[str, float]:
        """The merged figures of one measurement, keyed by figure name (unit in the name)."""

    def all_figures(self, m: Measurement) -> dict[str, float]:
        """`decode(m).figures` (for per-CPU kinds each CPU's beside the merged ones) for a caller that
        reads nothing else (`show`); kinds whose decode parses distributions override it to skip them."""
        return self.decode(m).figures

    def not_values(self, m: Measurement) -> dict[str, str]:
        """Figures the probe printed in this measurement that are no measurement (a difference whose
        subtracted cost was as large as what it was subtracted from), each with why; `figures` leaves
        them out, so that the cell's figures are over the valid repetitions only."""
        return {}

    @abstractmethod
    def is_figure(self, figure: str) -> bool:
        """Whether `figure` is a merged figure name this kind can yield (whether or not a run has it)."""

    def knows(self, name: str) -> bool:
        """Whether `name` is a figure of this kind, merged or (for per-CPU kinds) of one CPU."""
        cpu, figure = split_cpu(name)
        return self.is_figure(figure) and (cpu is None or self.per_cpu)

    def samples_needed(self, figure: str) -> int:
        """Fewest samples in one measurement for `figure` to mean what its name says."""
        return 1

    def is_extreme(self, figure: str) -> bool:
        """Whether the figure is the largest (or smallest) of its samples, so that what it shows
        depends on how many samples there were: a bound on it holds for the events they covered."""
        return False

    def sample_count(self, m: Measurement) -> int | None:
        """How many samples the measurement's figures rest on, if the kind counts samples."""
        return None

    def histogram(self, m: Measurement) -> Any:
        """The measurement's distribution (an analysis.histogram.Histogram), for kinds that record one."""
        return None

    @abstractmethod
    def describe(self, benchmark: dict[str, Any], params: dict[str, Any] | None) -> str:
        """What the benchmark measures, in words, from its campaign table and the probe's params."""

    def procedure(self, benchmark: dict[str, Any]) -> str | None:
        """How a measurement is made, when the commands the report lists are not all of it (a boot
        is timed around a power cycle); None when running them is the measurement."""
        return None

    def label(self, figure: str) -> str:
        """Short human name of a figure for tables and sentences."""
        return figure

    def unit(self, figure: str) -> str:
        """The unit of a figure's value; by default read from its name's suffix (`_us`, `_bps` ...)."""
        return suffix_unit(figure)

    def format(self, value: float | None, figure: str) -> str:
        """A figure's value with its unit, for sentences and table cells."""
        return format_value(value, self.unit(figure))

    def row_figures(self, present: list[str]) -> list[str]:
        """The per-repetition table's columns, given the figures the runs have."""
        return list(self.table_figures)

    def compared_figures(self, present: list[str]) -> list[str]:
        """The figures compared between environments and loads, given the figures the runs have.

        Kinds whose figures depend on the campaign (sizes, tests) choose among `present`."""
        return list(self.comparison_figures)

    def stable_figures(self, present: list[str]) -> list[str]:
        """The figures repetitions should agree on, so that their spread says a cell is noisy (not the
        maximum: one sample, legitimately jumpy)."""
        return []

    def lower_is_better(self, figure: str) -> bool:
        """Whether a smaller value of the figure is the better one (times: yes; bandwidths: no)."""
        return True

    def considerations(self, data, bench: str, comps: list,
                       analysed: Any = None) -> list[tuple[str, str, str]]:
        """The kind's own findings as (severity, topic, text).

        `data` is the run's RunData, `comps` the benchmark's comparisons, `analysed` this kind's `analyse`
        of the benchmark when already computed; the findings module adds the probe's warnings and the
        failed measurements to whatever this returns."""
        return []

    def analyse(self, data, bench: str) -> Any:
        """Analyses of the whole benchmark beyond figures and comparisons (an interference ranking),
        in a type of the kind's own, or None; the kind's report section reads them from
        `Evaluation.extras[bench]`."""
        return None


_REGISTRY: dict[str, Kind] = {}


def register(kind: Kind) -> Kind:
    _REGISTRY[kind.name] = kind
    return kind


def get_kind(name: str) -> Kind | None:
    if name not in _REGISTRY:
        load("decode", name)          # its own folder's decoder, so `show` of a run pays for its kinds only
    if name not in _REGISTRY:
        load("decode")
    return _REGISTRY.get(name)

