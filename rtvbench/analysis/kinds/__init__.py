"""Per-kind knowledge: which figures a benchmark kind yields and how to read them.

Each benchmark kind (latency; work, mem-lat, mem-bw, mem-alloc, os, ipc) is one
module in this package defining a `Kind` subclass and registering it, so that
adding a kind never means editing metrics, stats or the report. The measurement-
suite kinds share their figure conventions through `quantities.QuantityKind`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from rtvbench.analysis.histogram import Histogram
from rtvbench.analysis.units import format_value, suffix_unit
from rtvbench.results import Measurement


class Kind(ABC):
    """What analysis and report need to know about one benchmark kind."""

    name: str = ""
    #: figures shown per repetition in the result table, in column order
    table_figures: tuple[str, ...] = ()
    #: figures compared between environments and between loads
    comparison_figures: tuple[str, ...] = ()
    #: figures whose spread across repetitions says whether a cell is noisy
    stability_figures: tuple[str, ...] = ()
    #: figures ordered from the body of the distribution to its tail, for the consideration
    tail_figures: tuple[str, ...] = ()

    @abstractmethod
    def figures(self, m: Measurement) -> dict[str, float]:
        """Every figure of one measurement, keyed by figure name (unit in the name)."""

    @abstractmethod
    def is_figure(self, figure: str) -> bool:
        """Whether `figure` is a name this kind can yield (whether or not a given run has it)."""

    def samples_needed(self, figure: str) -> int:
        """Fewest samples in one measurement for `figure` to mean what its name says."""
        return 1

    def sample_count(self, m: Measurement) -> int | None:
        """How many samples the measurement's figures rest on, if the kind counts samples."""
        return None

    def histogram(self, m: Measurement) -> Histogram | None:
        """The measurement's distribution, for kinds that record one."""
        return None

    @abstractmethod
    def describe(self, benchmark: dict[str, Any], params: dict[str, Any] | None) -> str:
        """What the benchmark measures, in words, from its campaign table and the probe's params."""

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

    def lower_is_better(self, figure: str) -> bool:
        """Whether a smaller value of the figure is the better one (times: yes; bandwidths: no)."""
        return True

    def considerations(self, data, bench: str, comps: list) -> list[tuple[str, str, str]] | None:
        """The kind's own findings as (severity, topic, text), or None for the latency-style ones.

        `data` is the run's RunData, `comps` the benchmark's comparisons; the findings module adds
        the probe's warnings and the failed measurements to whatever this returns."""
        return None


_REGISTRY: dict[str, Kind] = {}


def register(kind: Kind) -> Kind:
    _REGISTRY[kind.name] = kind
    return kind


def get_kind(name: str) -> Kind | None:
    return _REGISTRY.get(name)


def kind_names() -> list[str]:
    return sorted(_REGISTRY)


# Built-in kinds register themselves on import.
from rtvbench.analysis.kinds import latency as _latency  # noqa: E402,F401
from rtvbench.analysis.kinds import (ipc as _ipc, mem_alloc as _mem_alloc, mem_bw as _mem_bw,  # noqa: E402,F401
                                     mem_lat as _mem_lat, os_primitives as _os, work as _work)
