"""`kind = "cpu"`: workers that keep their CPUs busy for `percent` of each `period_ms`."""

from __future__ import annotations

from typing import ClassVar, Literal

from rtvbench.loads.probe_load import ProbeLoadParams, register
from rtvbench.params import probe_number

Percent = probe_number("percent", 0, 100, "a duty cycle in percent")
PeriodMs = probe_number("period-ms", 0.1, 60000, "a number of milliseconds")


class CpuLoadParams(ProbeLoadParams):
    percent: Percent | None = None
    period_ms: PeriodMs | None = None
    method: Literal["integer", "float", "matrix", "mixed"] | None = None
    busy_clock: Literal["thread", "wall"] | None = None
    OPTIONS: ClassVar[dict[str, str]] = {"percent": "--percent", "period_ms": "--period-ms",
                                         "method": "--method", "busy_clock": "--busy-clock"}


register("cpu", CpuLoadParams)
