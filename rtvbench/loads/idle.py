"""The `idle` load: nothing runs besides the benchmark (the baseline)."""

from __future__ import annotations

from rtvbench.loads.base import LOADS, Load
from rtvbench.params import StrictModel
from rtvbench.targets.base import Background, Target


class IdleParams(StrictModel):
    pass


@LOADS.register("idle")
class IdleLoad(Load):
    kind = "idle"
    Params = IdleParams

    def commands(self) -> list[str]:
        return []

    def start(self, target: Target) -> Background | None:
        return None
