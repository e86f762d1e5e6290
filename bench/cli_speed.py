#!/usr/bin/env python3
"""Start-up of the rtvbench CLI as a ratio to a bare interpreter start.

Each command (`--help`, `list` and `show` on a store holding the golden runs, `validate` of a
one-benchmark campaign) runs in a pair with a bare `python -c pass` of the same interpreter (the
floor no Python CLI can go below), the order within the pair flipping every round, so what else the
machine does lands on both alike. Reported per command: the median of the per-round ratios command /
floor, their range, and the goal (<= 5). One more row, without a goal, is the floor of `validate`
itself: an interpreter that does only what validating a campaign cannot do without (import click and
the TOML reader, build and validate one pydantic model), as the same ratio. The store is made before timing (a fresh one would be
migrated by the first command, which is not what a user waits for every time), and every command
runs once before timing, its bytecode cached (bench/bytecode.py). Rows also go to
build/bench/cli_speed.json.

usage: bench/cli_speed.py [--rounds R]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bytecode import cached_bytecode_env  # noqa: E402
from figures import ratio_row, write_rows  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
GOAL = 5.0
#: what validating a campaign cannot do without, none of it rtvbench's own: click, the TOML reader and one
#: pydantic model built and validated (which imports pydantic's fields and types), pydantic's plugin loader
#: left out as the command line leaves it out. validate's start-up cannot go below this.
DEPENDENCIES = ("import click, tomllib; from rtvbench import pydantic_plugins; pydantic_plugins.look_for_none(); "
                "from pydantic import BaseModel\nclass M(BaseModel):\n    n: int\nM.model_validate(tomllib.loads('n = 1'))")
CAMPAIGN = 'name = "small"\n[environments.native]\ntarget = "local"\n[benchmarks.wakeup]\nkind = "latency"\n' \
           'duration_s = 5\n'


def wall(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env, cwd=REPO)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    py = sys.executable
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "rtvbench.db"
        with sqlite3.connect(db) as conn:
            conn.executescript((REPO / "tests/fixtures/golden/runs.sql").read_text(encoding="utf-8"))
        campaign = Path(tmp) / "small.toml"
        campaign.write_text(CAMPAIGN, encoding="utf-8")
        env = cached_bytecode_env(Path(tmp) / "bytecode")
        cli = [py, "-m", "rtvbench", "--store", f"sqlite:///{db}"]
        commands = {"--help": [*cli, "--help"], "list": [*cli, "list"], "show": [*cli, "show", "1"],
                    "validate": [*cli, "validate", str(campaign)],
                    "deps": [py, "-c", DEPENDENCIES]}
        for cmd in commands.values():
            wall(cmd, env)                     # each once: it works, and its bytecode is cached
        ratios: dict[str, list[float]] = {name: [] for name in commands}
        for rnd in range(args.rounds):
            for name, cmd in commands.items():
                if rnd % 2:
                    t, floor = wall(cmd, env), wall([py, "-c", "pass"], env)
                else:
                    floor, t = wall([py, "-c", "pass"], env), wall(cmd, env)
                ratios[name].append(t / floor)
    rows = [ratio_row(f"rtvbench {name} / python -c pass" if name != "deps" else
                      "click, tomllib, one pydantic model / python -c pass", "python -c pass (same interpreter, same round)",
                      values, f"<= {GOAL:g}" if name != "deps" else None) for name, values in ratios.items()]
    load_after = os.getloadavg()
    print(f"rtvbench CLI start-up / bare interpreter start, {args.rounds} alternating rounds, "
          f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after")
    print(f"{'command':10} {'median':>7} {'range':>13} {'goal':>6}  verdict")
    for name, row in zip(commands, rows):
        verdict = "floor of validate" if row["goal"] is None else "met" if row["met"] else "missed"
        print(f"{name:10} {row['median']:6.2f}x {row['min']:5.2f}-{row['max']:5.2f}x {row['goal'] or '':>6}  {verdict}")
    write_rows("cli_speed", load_before, load_after, rows)


if __name__ == "__main__":
    main()
