"""`kind = "fork"`: workers that fork and reap children, as fast as possible or at a rate."""

from __future__ import annotations

from typing import ClassVar

from rtvbench.loads.probe_load import ProbeLoadParams, register
from rtvbench.params import probe_number

ForkRate = probe_number("rate", 0, 1e6, "forks per second (0 = as fast as possible)")


class ForkLoadParams(ProbeLoadParams):
    rate: ForkRate | None = None
    OPTIONS: ClassVar[dict[str, str]] = {"rate": "--rate"}


register("fork", ForkLoadParams)
