"""The measurements of a campaign, in the order they run.

Every (environment, load, benchmark, repetition) is one measurement. They run in
an order shuffled with the campaign's seed: slow drift of the machine (thermal,
background activity) then spreads over all combinations instead of masquerading
as the overhead of whichever ran last. The same seed gives the same order, which
is what lets --resume continue a run.

A farm's boards measure at the same time (`rtvbench run --jobs N`): the machines each
measurement involves (its environment's, its loads' and its peer's) are joined into lanes,
groups of machines no measurement of another lane touches. A lane measures its part of the
shuffled plan one after another, in that order; lanes run side by side.
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, field

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


def involved_environments(campaign, p: Planned) -> set[str]:
    """Every environment a measurement runs something in: the measured one, each environment a
    load's `where` names (a combination's parts too), and a round trip's peer."""
    load = campaign.loads[p.load]
    parts = getattr(load, "parts", None) or [load]
    peer = campaign.benchmarks[p.benchmark].peer
    return ({p.environment} | {part.where for part in parts if part.where not in ("same", "neighbours")}
            | ({peer} if peer else set()))


def involved_machines(campaign, p: Planned) -> set[str]:
    """The machines a measurement occupies: those of its environments and of their neighbour
    guests (where `neighbours` loads and a disrupt load run)."""
    machines = set()
    for name in involved_environments(campaign, p):
        target = campaign.environments[name]
        machines.add(target.machine())
        machines.update(guest.machine() for guest in getattr(target, "neighbours", None) or [])
    return machines


@dataclass
class Lane:
    """Measurements that share machines, in plan order; no other lane touches these machines."""
    machines: tuple[str, ...]           # sorted
    environments: tuple[str, ...]       # in the campaign's order
    planned: list[Planned] = field(default_factory=list)

    def name(self) -> str:
        return ", ".join(self.machines)


def lanes(campaign, planned: list[Planned]) -> list[Lane]:
    """The lanes of these measurements (in plan order), by union-find over the machines each one
    involves; ordered by each lane's first measurement, so that a lane's order and the lanes' order
    follow from the seed alone."""
    parent: dict[str, str] = {}

    def root(m: str) -> str:
        while parent.setdefault(m, m) != m:
            parent[m] = parent[parent[m]]
            m = parent[m]
        return m
    involved = [involved_machines(campaign, p) for p in planned]
    for machines in involved:
        first, *others = sorted(machines)
        for other in others:
            parent[root(other)] = root(first)
    by_root: dict[str, Lane] = {}
    for p, machines in zip(planned, involved):
        key = root(next(iter(machines)))
        if key not in by_root:
            group = sorted(m for m in parent if root(m) == key)
            by_root[key] = Lane(tuple(group), ())
        by_root[key].planned.append(p)
    for lane in by_root.values():
        used = {name for p in lane.planned for name in involved_environments(campaign, p)}
        lane.environments = tuple(name for name in campaign.environments if name in used)
    return list(by_root.values())


def wall_seconds(campaign, found: list[Lane], jobs: int) -> float:
    """Roughly how long the lanes take with at most `jobs` of them at once: each lane, in order,
    starts when the first of the running ones ends."""
    ends = [0.0] * max(1, min(jobs, len(found)))
    for lane in found:
        start = heapq.heappop(ends)
        heapq.heappush(ends, start + expected_seconds(campaign, lane.planned))
    return max(ends)
