"""`kind = "timer"`: workers that sleep to absolute deadlines, `rate_hz` wake-ups per second over
all of them."""

from __future__ import annotations

from typing import ClassVar

from rtvbench.loads.probe_load import ProbeLoadParams, register
from rtvbench.params import probe_number

TimerRate = probe_number("rate-hz", 1, 1e6, "wake-ups per second")


class TimerLoadParams(ProbeLoadParams):
    rate_hz: TimerRate | None = None
    OPTIONS: ClassVar[dict[str, str]] = {"rate_hz": "--rate-hz"}


register("timer", TimerLoadParams)
