"""What an `io` load achieved: bytes written and read back, and its write-fsync-read cycles."""

from __future__ import annotations

from rtvbench.analysis.load_figures import Achieved, LoadFigures, register
from rtvbench.units import human_rate, significant


@register("io")
class IoFigures(LoadFigures):
    extra = ("fsyncs", "bytes_written", "bytes_read")
    summed = ("fsyncs", "bytes_written", "bytes_read")

    def nothing(self, a: Achieved) -> bool:
        return not a.bps

    def describe(self, a: Achieved, name: str) -> str:
        text = f"{name}: {human_rate(a.bps)} written and read back"
        if a.ops_per_s is not None:
            text += f", {significant(a.ops_per_s)} write-fsync-read cycles/s"
        return text
