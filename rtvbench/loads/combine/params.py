"""The `combine` load: several loads of the campaign at once (`combine = ["cpu50", "io"]`).

Each part keeps its own keys, its own `where` and its own records (stored under the part's
name), so "cpu50 + io" reports what cpu50 and io each achieved. Parts are launched together
and settle together (for the longest settle time of any part), then stopped together.
Combinations do not nest: the campaign check refuses a part that is itself a combination,
which also rules out cycles.
"""

from __future__ import annotations

from typing import Any

from pydantic import field_validator

from rtvbench.loads.base import LOADS, BackgroundGroup, Load, LoadContext
from rtvbench.params import StrictModel, is_valid_name
from rtvbench.targets.base import Background


class CombineParams(StrictModel):
    combine: list[Any]

    @field_validator("combine")
    @classmethod
    def _names(cls, v: list[Any]) -> list[str]:
        if not v:
            raise ValueError("must name at least one load, e.g. combine = [\"cpu50\", \"io\"]")
        if not all(isinstance(x, str) and is_valid_name(x) for x in v):
            raise ValueError("must be a list of load names")
        twice = sorted({x for x in v if v.count(x) > 1})
        if twice:
            raise ValueError("names " + ", ".join(f'"{x}"' for x in twice) + " more than once")
        return v


@LOADS.register("combine")
class CombinedLoad(Load):
    kind = "combine"
    Params = CombineParams

    def __init__(self, name: str, params: CombineParams) -> None:
        super().__init__(name, params)
        # The Load objects of the parts; set by the campaign once every load is validated.
        self.parts: list[Load] = []

    @property
    def settle_s(self) -> float:
        return max((p.settle_s for p in self.parts), default=0.0)

    def commands(self) -> list[str]:
        return [c for p in self.parts for c in p.commands()]

    def launch(self, ctx: LoadContext) -> Background | None:
        started: list[tuple[Load, Background]] = []
        try:
            for part in self.parts:
                bg = part.launch_everywhere(ctx)   # each part where its own `where` says
                if bg is not None:
                    started.append((part, bg))
        except BaseException:
            BackgroundGroup(started).stop()      # what already runs must not outlive the failure
            raise
        return BackgroundGroup(started) if started else None

    def check_running(self, bg: Background) -> None:
        assert isinstance(bg, BackgroundGroup)
        for part, part_bg in bg.parts:
            part.check_started(part_bg)
