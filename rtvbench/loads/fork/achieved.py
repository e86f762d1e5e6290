"""What a `fork` load achieved: children forked and reaped per second, and failed forks."""

from __future__ import annotations

from rtvbench.analysis.load_figures import Achieved, LoadFigures, register
from rtvbench.units import counted


@register("fork")
class ForkFigures(LoadFigures):
    extra = ("fork_failures",)
    summed = ("fork_failures",)

    def nothing(self, a: Achieved) -> bool:
        return not a.ops_per_s

    def describe(self, a: Achieved, name: str) -> str:
        text = f"{name}: {a.ops_per_s or 0:,.0f} forks/s"
        if a.extra.get("fork_failures"):
            text += f", {counted(a.extra['fork_failures'], 'failed fork')}"
        return text
