"""`kind = "leak"`: one worker that allocates and touches memory at a rate up to a limit, then
holds it."""

from __future__ import annotations

from typing import ClassVar

from pydantic import model_validator

from rtvbench.loads.probe_load import MAX_BUFFER, M, ProbeLoadParams, register
from rtvbench.params import probe_number, probe_size

LeakRate = probe_number("rate-mbps", 0, 1e6, "MiB per second (0 = all at once)")
LeakLimit = probe_size("limit", M, MAX_BUFFER)


class LeakLoadParams(ProbeLoadParams):
    rate_mbps: LeakRate | None = None
    limit: LeakLimit | None = None
    OPTIONS: ClassVar[dict[str, str]] = {"rate_mbps": "--rate-mbps", "limit": "--limit"}

    @model_validator(mode="after")
    def _one_worker(self):
        if self.workers not in (None, 1):
            raise ValueError("a leak load runs one worker; drop workers or use 1")
        return self


register("leak", LeakLoadParams)
