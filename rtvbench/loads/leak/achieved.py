"""What a `leak` load achieved: how fast its resident memory grew, to what, and whether it holds at
its limit."""

from __future__ import annotations

from typing import Any

from rtvbench.analysis.load_figures import Achieved, LoadFigures, register
from rtvbench.units import human_size, measured_size, significant

MIB = 1 << 20


@register("leak")
class LeakFigures(LoadFigures):
    extra = ("leaked_bytes", "rss_bytes", "rss_peak_bytes", "holding", "limit_reached_ns")
    latest = ("leaked_bytes", "rss_bytes", "holding")
    maxed = ("rss_peak_bytes", "limit_reached_ns", "limit_bytes")
    params = ("limit_bytes", "rate_bps")
    params_as_extra = ("limit_bytes",)

    def from_windows(self, windows: list[dict[str, Any]]) -> dict[str, Any]:
        out = super().from_windows(windows)
        rss = [w["rss_bytes"] for w in windows if isinstance(w.get("rss_bytes"), (int, float))]
        if rss:
            out["rss_peak_bytes"] = max(rss)
        return out

    def nothing(self, a: Achieved) -> bool:
        return not a.bps and not a.extra.get("leaked_bytes")

    def describe(self, a: Achieved, name: str) -> str:
        x = a.extra
        text = f"{name}: grew at {significant((a.bps or 0) / MIB)} MiB/s"
        if isinstance(x.get("leaked_bytes"), (int, float)):
            text += f" to {measured_size(x['leaked_bytes'])}"
        if isinstance(x.get("limit_bytes"), (int, float)):
            text += f" (limit {human_size(x['limit_bytes'])})"
        if isinstance(x.get("rss_peak_bytes"), (int, float)):
            text += f", RSS peak {measured_size(x['rss_peak_bytes'])}"
        if x.get("holding"):
            text += ", holding at the limit"
        return text
