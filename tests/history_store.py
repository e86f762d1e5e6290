"""A store of nightly runs with one planted step: board_a's wake-up latency rises by a third from run
STEP_RUN on, board_b's stays where it was. The ground truth of the change-point and publish tests."""

from __future__ import annotations

from rtvbench.campaign.reader import parse_campaign
from rtvbench.store import open_store
from synthetic_runs import build_run, lognormal_latency, store_run

CAMPAIGN = """name = "nightly"
repetitions = 3
[environments.board_a]
target = "local"
[environments.board_b]
target = "local"
[loads.idle]
[benchmarks.wakeup]
kind = "latency"
interval_us = 200
duration_s = 10
"""

RUNS = 16
STEP_RUN = 9            # the first run of board_a's higher level (run ids count from 1)


def add_run(engine, n: int) -> int:
    """Store nightly run number n (1-based); its id."""
    step = 4 / 3 if n >= STEP_RUN else 1.0
    dists = {("board_a", "idle"): lognormal_latency(2_000 * step), ("board_b", "idle"): lognormal_latency(3_000)}
    run = build_run(parse_campaign(CAMPAIGN).data, dists, repetitions=3, samples=1_000, seed=100 + n)
    return store_run(engine, CAMPAIGN, run, {"kernel": f"6.{n}", "board": "a+b"})


def history_store(directory, runs: int = RUNS) -> str:
    """A SQLite store of `runs` nightly runs; its URL."""
    url = f"sqlite:///{directory}/history.db"
    engine = open_store(url)
    for n in range(1, runs + 1):
        add_run(engine, n)
    return url
