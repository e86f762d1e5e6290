"""The `idle` load: nothing runs besides the benchmark (the baseline)."""

from __future__ import annotations

from rtvbench.loads.base import LOADS, Load, LoadContext
from rtvbench.params import StrictModel
from rtvbench.targets.base import Background


class IdleParams(StrictModel):
    pass


@LOADS.register("idle")
class IdleLoad(Load):
    kind = "idle"
    Params = IdleParams

    def commands(self) -> list[str]:
        return []

    def launch(self, ctx: LoadContext) -> Background | None:
        return None
