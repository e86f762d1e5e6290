"""The measurements of a campaign, in the order they run.

Every (environment, load, benchmark, repetition) is one measurement. They run in
an order shuffled with the campaign's seed: slow drift of the machine (thermal,
background activity) then spreads over all combinations instead of masquerading
as the overhead of whichever ran last. The same seed gives the same order, which
is what lets --resume continue a run.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

# Per-measurement cost beyond the benchmark's own duration (process start, load
# settle time, store writes), for time estimates only.
OVERHEAD_S = 0.8


@dataclass(frozen=True)
class Planned:
    environment: str
    load: str
    benchmark: str
    repetition: int             # 0-based
    order_index: int = 0        # position in the shuffled plan

    @property
    def key(self) -> tuple[str, str, str, int]:
        return (self.environment, self.load, self.benchmark, self.repetition)

    def label(self) -> str:
        return f"{self.environment}/{self.load}/{self.benchmark} #{self.repetition + 1}"


def plan(campaign, repetitions: int | None = None) -> list[Planned]:
    """Every measurement of the campaign (`repetitions` of each cell instead of the campaign's when
    given: a soak's round), shuffled with random.Random(campaign.seed)."""
    items = [(e, lo, b, r)
             for e in campaign.environments
             for lo in campaign.loads
             for b in campaign.benchmarks
             for r in range(campaign.repetitions if repetitions is None else repetitions)]
    random.Random(campaign.seed).shuffle(items)
    return [Planned(*item, order_index=i) for i, item in enumerate(items)]


def expected_seconds(campaign, planned: list[Planned]) -> float:
    """Roughly how long these measurements take, for the ETA."""
    return sum(campaign.benchmarks[p.benchmark].expected_seconds() + OVERHEAD_S for p in planned)
