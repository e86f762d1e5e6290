"""The rows every bench script writes to build/bench/<script>.json, for `make bench`'s closing table:
each a ratio measured against a baseline in the same run, its median and range over the rounds, and
its goal."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "build" / "bench"


def bench_row(figure: str, baseline: str, ratios: list[float], goal: str | None) -> dict:
    """One row. `goal` is "<= X" or ">= X" on the median ratio, or None for a row without one."""
    median = statistics.median(ratios)
    met = None
    if goal is not None:
        op, bound = goal.split()
        met = median <= float(bound) if op == "<=" else median >= float(bound)
    return {"figure": figure, "baseline": baseline, "rounds": len(ratios), "median": round(median, 4),
            "min": round(min(ratios), 4), "max": round(max(ratios), 4), "goal": goal, "met": met}


def write_rows(bench: str, load_before, load_after, rows: list[dict]) -> Path:
    """build/bench/<bench>.json with the load averages around the measurement."""
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{bench}.json"
    path.write_text(json.dumps({"bench": bench, "load_before": [round(x, 2) for x in load_before],
                                "load_after": [round(x, 2) for x in load_after], "rows": rows}, indent=1) + "\n",
                    encoding="utf-8")
    return path
