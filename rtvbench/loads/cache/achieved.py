"""What a `cache` load achieved: the cache lines it touched per second, and their bytes."""

from __future__ import annotations

from rtvbench.analysis.load_figures import Achieved, LoadFigures, register
from rtvbench.units import human_rate


@register("cache")
class CacheFigures(LoadFigures):
    def nothing(self, a: Achieved) -> bool:
        return not a.bps

    def describe(self, a: Achieved, name: str) -> str:
        return f"{name}: {human_rate(a.ops_per_s, ' lines/s').replace('  ', ' ')} ({human_rate(a.bps)})"
