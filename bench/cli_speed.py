#!/usr/bin/env python3
"""Start-up time of the rtvbench CLI: `--help`, and `list` on a store at the newest schema.

Each command runs alternately with a bare `python -c pass` (the interpreter's own start-up, the
floor no Python CLI can go below), several rounds; reported: the median wall time of each, the
median of the per-round differences from the floor, and the goals (`--help` <= 0.15 s, `list`
<= 0.3 s). The store is made once before timing (a fresh one would be migrated by the first
command, which is not what a user waits for every time).

usage: bench/cli_speed.py [--rounds R]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GOALS = {"--help": 0.15, "list": 0.30}


def wall(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        store = f"sqlite:///{tmp}/rtvbench.db"
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        cli = [py, "-m", "rtvbench", "--store", store]
        subprocess.run([*cli, "list"], check=True, capture_output=True, env=env, cwd=REPO)  # migrate once
        commands = {"--help": [*cli, "--help"], "list": [*cli, "list"]}
        floors: dict[str, list[float]] = {name: [] for name in commands}
        times: dict[str, list[float]] = {name: [] for name in commands}
        for rnd in range(args.rounds):
            order = list(commands.items())
            if rnd % 2:
                order.reverse()
            for name, cmd in order:
                floors[name].append(wall([py, "-c", "pass"], env))
                times[name].append(wall(cmd, env))
        load = os.getloadavg()[0]
    print(f"rtvbench CLI start-up, {args.rounds} alternating rounds, load average {load:.2f}")
    print(f"{'command':10} {'median':>8} {'floor':>8} {'above floor':>12} {'goal':>6}  verdict")
    for name, values in times.items():
        above = statistics.median(v - f for v, f in zip(values, floors[name]))
        med = statistics.median(values)
        verdict = "met" if med <= GOALS[name] else "missed"
        print(f"{name:10} {med:7.3f}s {statistics.median(floors[name]):7.3f}s {above:11.3f}s {GOALS[name]:5.2f}s  "
              f"{verdict}")


if __name__ == "__main__":
    main()
