"""What a `mem` load achieved: the bandwidth its workers streamed."""

from __future__ import annotations

from rtvbench.analysis.load_figures import Achieved, LoadFigures, register
from rtvbench.units import human_rate


@register("mem")
class MemFigures(LoadFigures):
    extra = ("passes",)
    summed = ("passes",)
    params = ("op",)

    def nothing(self, a: Achieved) -> bool:
        return not a.bps

    def describe(self, a: Achieved, name: str) -> str:
        return f"{name}: {human_rate(a.bps)} ({a.params.get('op', 'copy')})"
