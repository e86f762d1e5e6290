#!/usr/bin/env python3
"""A farm measured at once against one board at a time: `rtvbench run --jobs 3` and `--jobs 1` of
the same campaign over three ssh boards (an sshd each in a network namespace of its own, built by the
tests' farm helper), in alternating pairs. Per round, from the store's measurement timestamps:
  - the one-at-a-time run's measuring span over the concurrent run's: goal >= 2 (three boards);
  - the concurrent run's span over its slowest board's share (the sum of that board's
    measurements): goal <= 1.3, the farm takes the slowest board's time, not the sum.
(That two environments of one machine never overlap is a test's: tests/test_farm_e2e.py.) Medians and
ranges of the per-round ratios and the load average; rows to build/bench/farm_speed.json.

Needs root (network namespaces) and sshd.

usage: bench/farm_speed.py [--rounds R] [--wait-s S]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests"))

from figures import BenchFile, alternating, describe  # noqa: E402
from helpers.farm import farm, why_not, write_campaign  # noqa: E402
from rtvbench.store import load_run, open_store  # noqa: E402

REPS = 2


def _spans(run, env: str | None = None) -> list:
    return [(m.started_at, m.finished_at) for m in run.measurements
            if m.status == "ok" and (env is None or m.environment == env)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--wait-s", type=int, default=3, help="how long each measurement waits on its board")
    args = ap.parse_args()
    why = why_not()
    if why:
        sys.exit(f"bench/farm_speed.py: cannot build the farm here: {why}.")
    out = BenchFile(__file__)
    with tempfile.TemporaryDirectory() as tmp, farm(Path(tmp) / "boards") as servers:
        work = Path(tmp)
        write_campaign(work, servers, "farm", REPS, args.wait_s)
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        engine = open_store(f"sqlite:///{work}/s.db", write=True)

        def run(jobs: str):
            r = subprocess.run([sys.executable, "-m", "rtvbench", "run", "c.toml", "--jobs", jobs,
                                "--store", "sqlite:///s.db"],
                               cwd=work, env=env, capture_output=True, text=True, timeout=600)
            if r.returncode != 0:
                sys.exit(f"bench/farm_speed.py: the run with --jobs {jobs} failed: {r.stderr.strip()[-500:]}")
            run_id = max(int(line.split()[1]) for line in r.stdout.splitlines() if line.startswith("Run "))
            stored = load_run(engine, run_id)
            every = _spans(stored)
            span = (max(e for _, e in every) - min(s for s, _ in every)).total_seconds()
            return span, max(sum((b - a).total_seconds() for a, b in _spans(stored, e)) for e in ("b1", "b2", "b3"))

        pairs = alternating(args.rounds, lambda: run("3"), lambda: run("1"))
    rows = [out.add("one at a time / at once (measuring span)", "the same campaign with --jobs 3, same round",
                    [seq[0] / con[0] for con, seq in pairs], ">= 2"),
            out.add("at once / slowest board's share", "the slowest board's measurements, same run",
                    [con[0] / con[1] for con, _ in pairs], "<= 1.3")]
    out.write()
    print(f"three ssh boards, {REPS} x {args.wait_s} s each, {args.rounds} alternating rounds, {out.load_text()}")
    for row in rows:
        print(describe(row))


if __name__ == "__main__":
    main()
