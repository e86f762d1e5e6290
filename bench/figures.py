"""A bench's figures as ratios against a baseline measured in the same run, written where
bench/summary.py finds them: build/bench/<script name>.json.

On a shared machine an absolute time says more about the other processes than about rtvbench, so
every figure is a ratio of two things measured in alternating pairs (the order flips every round):
whatever else the machine does lands on both sides of a round alike. A row keeps the median of the
per-round ratios, their range, and the goal it is held to; the file keeps the load averages from
before and after the rounds.
"""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path
from typing import Callable, TypeVar

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "build" / "bench"

A = TypeVar("A")
B = TypeVar("B")


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def alternating(rounds: int, a: Callable[[], A], b: Callable[[], B]) -> list[tuple[A, B]]:
    """`rounds` pairs (a's value, b's value), b running first in every other round."""
    pairs = []
    for rnd in range(rounds):
        if rnd % 2:
            second = b()
            pairs.append((a(), second))
        else:
            first = a()
            pairs.append((first, b()))
    return pairs


def goal_met(goal: str | None, value: float) -> bool | None:
    """Whether `value` meets a goal written "<= 1.01" or ">= 0.95"; None without a goal."""
    if goal is None:
        return None
    op, bound = goal.split()
    if op not in ("<=", ">="):
        raise ValueError(f"a goal is written '<= N' or '>= N', not {goal!r}")
    return value <= float(bound) if op == "<=" else value >= float(bound)


def ratio_row(figure: str, baseline: str, ratios: list[float], goal: str | None = None) -> dict:
    """One row: the median of the per-round ratios, their range, and the goal it is held to."""
    median = statistics.median(ratios)
    return {"figure": figure, "baseline": baseline, "rounds": len(ratios), "median": round(median, 4),
            "min": round(min(ratios), 4), "max": round(max(ratios), 4), "goal": goal, "met": goal_met(goal, median)}


def write_rows(bench: str, load_before: list[float], load_after: list[float], rows: list[dict]) -> Path:
    """build/bench/<bench>.json, with the load averages from before and after the rounds."""
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{bench}.json"
    path.write_text(json.dumps({"bench": bench, "load_before": [round(x, 2) for x in load_before],
                                "load_after": [round(x, 2) for x in load_after], "rows": rows}, indent=1) + "\n")
    return path


class BenchFile:
    """The rows of one bench script, written to build/bench/<script name>.json by write()."""

    def __init__(self, script: str) -> None:
        self.bench = Path(script).stem
        self.load_before = loadavg()
        self.load_after: list[float] | None = None
        self.rows: list[dict] = []

    def add(self, figure: str, baseline: str, ratios: list[float], goal: str | None = None) -> dict:
        self.rows.append(ratio_row(figure, baseline, ratios, goal))
        return self.rows[-1]

    def write(self) -> Path:
        self.load_after = loadavg()
        return write_rows(self.bench, self.load_before, self.load_after, self.rows)

    def load_text(self) -> str:
        """The 1-minute load average before and after the rounds (after: once written)."""
        after = self.load_after or loadavg()
        return f"load average {self.load_before[0]:.2f} -> {after[0]:.2f}"


def describe(row: dict) -> str:
    """One line: the ratio, its range, and the goal's verdict."""
    verdict = "" if row["goal"] is None else f"; goal {row['goal']}: {'met' if row['met'] else 'missed'}"
    return (f"{row['figure']} (baseline: {row['baseline']}): median {row['median']:.3f}, "
            f"range {row['min']:.3f}..{row['max']:.3f} over {row['rounds']} rounds{verdict}")
