#!/usr/bin/env python3
"""What rtvbench itself adds to a campaign: runner, target and store around each measurement.

A campaign of N latency measurements of D seconds each (local target, idle load) runs with
`rtvbench run`, alternating (the order flips every round) with a bare run of the same probe
commands, as the store recorded them, one after the other from a plain loop. Per round, three
ratios:
  - the span from the first measurement's start to the last one's end (as the store records them)
    over the time the probe measured (the sum of its `end.elapsed_ns`): what the runner, the target
    (starting the probe, the thermal sampler, /proc samples) and the store add between and around
    the measurements; goal <= 1.01 (at most 1 % of the measuring span);
  - that span over the bare loop's wall time: the same, against running the probe with nothing
    around it; goal <= 1.01;
  - the whole command's wall time over the bare loop's: with the fixed costs (interpreter
    start-up, the store's creation, the environment's fingerprint, the report); no goal.
Medians and ranges of the per-round ratios, the load average, the milliseconds per measurement
beside them; the rows go to build/bench/campaign_overhead.json (bench/figures.py).

usage: bench/campaign_overhead.py [--measurements N] [--duration-s D] [--rounds R]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from figures import BenchFile, alternating, describe  # noqa: E402

GOAL = "<= 1.01"

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


def campaign_run(reps: int, duration: float) -> tuple[float, float, float, list[list[str]]]:
    """(wall seconds of `rtvbench run`, seconds from the first measurement's start to the last one's
    end, seconds the probe measured, the probe commands in the order they ran)."""
    with tempfile.TemporaryDirectory() as tmp:
        campaign = Path(tmp) / "c.toml"
        campaign.write_text(CAMPAIGN.format(reps=reps, duration=duration))
        store = Path(tmp) / "store.db"
        t0 = time.perf_counter()
        # This checkout's rtvbench, whatever the interpreter has installed (a worktree shares its venv).
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
        proc = subprocess.run([sys.executable, "-m", "rtvbench", "--store", f"sqlite:///{store}", "run",
                               str(campaign)], capture_output=True, text=True, cwd=tmp, env=env)
        wall = time.perf_counter() - t0
        if proc.returncode not in (0, 1):
            raise SystemExit(f"rtvbench run failed ({proc.returncode}): {proc.stderr.strip()[-800:]}")
        with sqlite3.connect(store) as db:
            ends = [json.loads(d) for (d,) in db.execute("SELECT data FROM records WHERE type = 'end'")]
            first, last = db.execute("SELECT min(started_at), max(finished_at) FROM measurements").fetchone()
            commands = [json.loads(c) for (c,) in db.execute("SELECT command FROM measurements ORDER BY id")]
        if len(ends) != reps:
            raise SystemExit(f"expected {reps} measurements, found {len(ends)} end records")
        span = (datetime.fromisoformat(last) - datetime.fromisoformat(first)).total_seconds()
        return wall, span, sum(e.get("elapsed_ns", 0) for e in ends) / 1e9, commands


def bare_run(commands: list[list[str]]) -> float:
    """Wall seconds of the probe commands run one after the other, their output read from a pipe as
    the runner reads it, and nothing else."""
    t0 = time.perf_counter()
    for argv in commands:
        subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--measurements", type=int, default=10)
    ap.add_argument("--duration-s", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    subprocess.run(["make", "-s", "-C", str(REPO), "probe"], check=True)
    out = BenchFile(__file__)
    # The bare loop runs the commands a campaign stored: one campaign first, outside the rounds.
    commands = campaign_run(args.measurements, args.duration_s)[3]
    pairs = alternating(args.rounds, lambda: campaign_run(args.measurements, args.duration_s),
                        lambda: bare_run(commands))
    what = f"{args.measurements} latency measurements of {args.duration_s:g} s"
    rows = [
        out.add(f"campaign span / probe elapsed ({what})", "the probe's own elapsed_ns, same campaign",
                [span / measured for (_, span, measured, _), _ in pairs], GOAL),
        out.add(f"campaign span / bare probe runs ({what})", "the same probe commands from a plain loop",
                [span / bare for (_, span, _, _), bare in pairs], GOAL),
        out.add(f"rtvbench run / bare probe runs ({what})", "the same probe commands from a plain loop",
                [wall / bare for (wall, _, _, _), bare in pairs]),
    ]
    out.write()
    per_ms = statistics.median((span - measured) / args.measurements * 1000 for (_, span, measured, _), _ in pairs)
    print(f"campaign overhead, {args.rounds} alternating rounds, {out.load_text()}; "
          f"{per_ms:.0f} ms per measurement (median)")
    for row in rows:
        print(f"  {describe(row)}")


if __name__ == "__main__":
    main()
