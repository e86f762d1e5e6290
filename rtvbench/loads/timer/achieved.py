"""What a `timer` load achieved: wake-ups per second, their lateness, deadlines overslept."""

from __future__ import annotations

from rtvbench.analysis.load_figures import Achieved, LoadFigures, register
from rtvbench.units import counted, human_duration


@register("timer")
class TimerFigures(LoadFigures):
    extra = ("missed", "late_avg_ns", "late_max_ns")
    summed = ("missed",)
    latest = ("late_avg_ns",)
    maxed = ("late_max_ns",)
    params = ("rate_hz",)

    def nothing(self, a: Achieved) -> bool:
        return not a.ops_per_s

    def describe(self, a: Achieved, name: str) -> str:
        text = f"{name}: {a.ops_per_s or 0:,.0f} wake-ups/s"
        if isinstance(a.extra.get("late_avg_ns"), (int, float)):
            text += f", mean lateness {human_duration(a.extra['late_avg_ns'])}"
        if a.extra.get("missed"):
            text += f", {counted(a.extra['missed'], 'deadline')} overslept"
        return text
