"""What a `net` load achieved: the bandwidth delivered over loopback TCP."""

from __future__ import annotations

from rtvbench.analysis.load_figures import Achieved, LoadFigures, register
from rtvbench.units import human_rate


@register("net")
class NetFigures(LoadFigures):
    extra = ("bytes_sent",)
    summed = ("bytes_sent",)

    def nothing(self, a: Achieved) -> bool:
        return not a.bps

    def describe(self, a: Achieved, name: str) -> str:
        return f"{name}: {human_rate(a.bps)} over loopback TCP"
