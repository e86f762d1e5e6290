"""Figures of single measurements and the `<benchmark>.<figure>` metric names that address them."""

from __future__ import annotations

from rtvbench.analysis.kind import get_kind, split_cpu
from rtvbench.units import suffix_unit
from rtvbench.results import Measurement


def known_figure(kind: str, figure: str) -> bool:
    """Whether `figure` (e.g. "max_us") is a figure the benchmark kind `kind` yields."""
    k = get_kind(kind)
    return k is not None and k.knows(figure)


def split_metric(metric: str) -> tuple[str, str]:
    """"wakeup.max_us" -> ("wakeup", "max_us"); the benchmark name may itself contain dots."""
    bench, sep, figure = metric.rpartition(".")
    if not sep or not bench or not figure:
        raise ValueError(f"metric {metric!r} is not <benchmark>.<figure>")
    return bench, figure


def resolve_metric(metric: str, benchmarks: list[str]) -> tuple[str, str]:
    """Like split_metric, but knowing the benchmark names: figures of the measurement-suite kinds
    contain dots themselves (`mem.lat.64MiB_random` is benchmark `mem`, figure `lat.64MiB_random`),
    so the longest benchmark name the metric starts with decides where the figure begins."""
    for bench in sorted(benchmarks, key=len, reverse=True):
        if metric.startswith(bench + ".") and len(metric) > len(bench) + 1:
            return bench, metric[len(bench) + 1:]
    return split_metric(metric)


def measurement_figures(m: Measurement) -> dict[str, float]:
    """All figures of a measurement; empty for unknown kinds and for measurements without results."""
    k = get_kind(m.kind)
    if k is None or not m.results:
        return {}
    return k.decode(m).figures


def unit_of(figure: str) -> str:
    """The unit a figure's value is in, read from its name (the latency kind's convention)."""
    return suffix_unit(figure)


def figure_unit(kind: str, figure: str) -> str:
    """The unit of a figure of a benchmark kind, as the kind reads it."""
    k = get_kind(kind)
    figure = split_cpu(figure)[1]
    return k.unit(figure) if k is not None else suffix_unit(figure)
