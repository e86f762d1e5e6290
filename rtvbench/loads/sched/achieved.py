"""What a `sched` load achieved: message round trips per second, each two wake-ups."""

from __future__ import annotations

from rtvbench.analysis.load_figures import Achieved, LoadFigures, register


@register("sched")
class SchedFigures(LoadFigures):
    extra = ("answered",)
    summed = ("answered",)

    def nothing(self, a: Achieved) -> bool:
        return not a.ops_per_s

    def describe(self, a: Achieved, name: str) -> str:
        return f"{name}: {a.ops_per_s or 0:,.0f} round trips/s ({2 * (a.ops_per_s or 0):,.0f} wake-ups/s)"
