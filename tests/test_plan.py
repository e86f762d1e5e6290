"""The measurement order: every combination once, shuffled deterministically by seed."""

from __future__ import annotations

from rtvbench.campaign.reader import parse_campaign
from rtvbench.campaign.plan import plan

TEXT = """
name = "order"
repetitions = 4
seed = {seed}
[environments.a]
target = "local"
[environments.b]
target = "local"
[loads.idle]
[loads.other]
command = "true"
[benchmarks.w]
kind = "latency"
duration_s = 1
"""


def order(seed: int) -> list[tuple]:
    return [p.key for p in plan(parse_campaign(TEXT.format(seed=seed)))]


def test_plan_is_every_combination_once():
    keys = order(1)
    assert len(keys) == 2 * 2 * 1 * 4 == len(set(keys))
    assert set(keys) == {(e, lo, "w", r) for e in "ab" for lo in ("idle", "other") for r in range(4)}
    assert [p.order_index for p in plan(parse_campaign(TEXT.format(seed=1)))] == list(range(16))


def test_same_seed_same_order_other_seed_other_order():
    assert order(1) == order(1)
    assert order(1) != order(2)
    # Shuffled, not the nested-loop order (16! orders: a fixed seed cannot hit it by chance).
    nested = sorted(order(1), key=lambda k: (k[0], k[1], k[3]))
    assert order(1) != nested and order(2) != nested
