"""Figures of single measurements and the `<benchmark>.<figure>` metric names that address them."""

from __future__ import annotations

from rtvbench.analysis.kinds import get_kind
from rtvbench.results import Measurement


def known_figure(kind: str, figure: str) -> bool:
    """Whether `figure` (e.g. "max_us") is a figure the benchmark kind `kind` yields."""
    k = get_kind(kind)
    return k is not None and k.is_figure(figure)


def split_metric(metric: str) -> tuple[str, str]:
    """"wakeup.max_us" -> ("wakeup", "max_us"); the benchmark name may itself contain dots."""
    bench, sep, figure = metric.rpartition(".")
    if not sep or not bench or not figure:
        raise ValueError(f"metric {metric!r} is not <benchmark>.<figure>")
    return bench, figure


def measurement_figures(m: Measurement) -> dict[str, float]:
    """All figures of a measurement; empty for unknown kinds and for measurements without results."""
    k = get_kind(m.kind)
    if k is None or not m.results:
        return {}
    return k.figures(m)


def unit_of(figure: str) -> str:
    """The unit a figure's value is in, read from its name."""
    for suffix in ("ns", "us", "ms", "bps", "per_s"):
        if figure.endswith("_" + suffix):
            return suffix
    return "count"
