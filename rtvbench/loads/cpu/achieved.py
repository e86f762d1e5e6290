"""What a `cpu` load achieved: its CPU share per CPU (or per unpinned worker) against its target."""

from __future__ import annotations

from rtvbench.analysis.load_figures import Achieved, LoadFigures, percent, register


@register("cpu")
class CpuFigures(LoadFigures):
    extra = ("short_periods",)
    summed = ("short_periods",)
    params = ("percent",)

    def nothing(self, a: Achieved) -> bool:
        return not a.achieved_percent or a.achieved_percent < 0.5

    def describe(self, a: Achieved, name: str) -> str:
        n = len(a.per_cpu)
        where = (f"on {n} CPU{'s' if n != 1 else ''}" if a.pinned
                 else f"in {n} unpinned worker{'s' if n != 1 else ''}")
        if a.pinned and a.workers and a.workers > n:
            # Several workers share a CPU: the headline is per worker, the CPUs' shares add up.
            where = f"per worker, {a.workers} workers {where}"
        text = f"{name} held {percent(a.achieved_percent)} {where}"
        if n > 1 or not a.pinned:
            text += " (" + ", ".join(f"{label}: {percent(v)}" for label, v in a.per_cpu.items()) + ")"
        target = a.params.get("percent")
        if isinstance(target, (int, float)):
            text += f", target {target:g} %"
        short = a.extra.get("short_periods")
        if short:
            text += f", {short:,.0f} period{'s' if short != 1 else ''} short of budget"
        return text
