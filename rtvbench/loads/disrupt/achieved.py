"""What a `disrupt` load achieved: how many times it restarted a guest during the measurement."""

from __future__ import annotations

from rtvbench.analysis.load_figures import Achieved, LoadFigures, register


@register("disrupt")
class DisruptFigures(LoadFigures):
    extra = ("events",)

    def nothing(self, a: Achieved) -> bool:
        return not a.extra.get("events")

    def describe(self, a: Achieved, name: str) -> str:
        n = a.extra.get("events") or 0
        return f"{name}: {n:,.0f} guest {'restarts' if n != 1 else 'restart'} during the measurement"
