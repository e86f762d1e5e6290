#!/usr/bin/env python3
"""What rtvbench itself adds to a campaign: runner, target and store around each measurement.

A campaign of N latency measurements of D seconds each (local target, idle load) runs with
`rtvbench run`. The overhead is the span from the first measurement's start to the last one's end
(as the store records them) less the time the probe measured (the sum of its `end.elapsed_ns`): the
runner, the target (starting the probe, /proc samples, preflight) and the store, per measurement
and as a share of that span. The whole command's wall time is given too; it adds the fixed costs
(interpreter start-up, the store's creation, the environment's fingerprint, the report).
Medians of `--rounds`.

Goal: <= 2 % of the wall time for 3 s measurements.

usage: bench/campaign_overhead.py [--measurements N] [--duration-s D] [--rounds R]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GOAL_PERCENT = 2.0

CAMPAIGN = """
name = "overhead"
repetitions = {reps}

[environments.native]
target = "local"

[benchmarks.wakeup]
kind = "latency"
interval_us = 1000
duration_s = {duration}
"""


def one_run(reps: int, duration: float) -> tuple[float, float, float]:
    """(wall seconds of `rtvbench run`, seconds from the first measurement's start to the last one's
    end, seconds the probe measured)."""
    with tempfile.TemporaryDirectory() as tmp:
        campaign = Path(tmp) / "c.toml"
        campaign.write_text(CAMPAIGN.format(reps=reps, duration=duration))
        store = Path(tmp) / "store.db"
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "rtvbench", "--store", f"sqlite:///{store}", "run",
                               str(campaign)], capture_output=True, text=True, cwd=tmp)
        wall = time.perf_counter() - t0
        if proc.returncode not in (0, 1):
            raise SystemExit(f"rtvbench run failed ({proc.returncode}): {proc.stderr.strip()[-800:]}")
        with sqlite3.connect(store) as db:
            ends = [json.loads(d) for (d,) in db.execute("SELECT data FROM records WHERE type = 'end'")]
            first, last = db.execute("SELECT min(started_at), max(finished_at) FROM measurements").fetchone()
        if len(ends) != reps:
            raise SystemExit(f"expected {reps} measurements, found {len(ends)} end records")
        span = (datetime.fromisoformat(last) - datetime.fromisoformat(first)).total_seconds()
        return wall, span, sum(e.get("elapsed_ns", 0) for e in ends) / 1e9


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--measurements", type=int, default=10)
    ap.add_argument("--duration-s", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    subprocess.run(["make", "-s", "-C", str(REPO), "probe"], check=True)
    shares, per, whole = [], [], []
    for _ in range(args.rounds):
        wall, span, measured = one_run(args.measurements, args.duration_s)
        shares.append((span - measured) / span * 100)
        per.append((span - measured) / args.measurements)
        whole.append((wall - measured) / wall * 100)
    share = statistics.median(shares)
    print(f"campaign overhead: {args.measurements} latency measurements of {args.duration_s:g} s, "
          f"{args.rounds} rounds: {share:.2f} % of the measuring span ({min(shares):.2f}..{max(shares):.2f}), "
          f"{statistics.median(per) * 1000:.0f} ms per measurement; goal <= {GOAL_PERCENT:g} %: "
          f"{'met' if share <= GOAL_PERCENT else 'missed'}. The whole command, start-up and report included: "
          f"{statistics.median(whole):.1f} % of its wall time.")


if __name__ == "__main__":
    main()
