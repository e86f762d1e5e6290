#!/usr/bin/env python3
"""Per-wake-up CPU cost of `rtvb-probe latency` vs. cyclictest, and peak RSS.

Both run the same measurement (one thread on CPU 0, SCHED_FIFO 80, 500 us
interval, N loops), alternately, several rounds; CPU time (user + system) and
peak RSS of each child come from GNU time. Reported: medians, and the
ratio within each round (the machine is shared, so ratios in one run are what
to compare).

usage: bench/latency_cpu_cost.py [--loops N] [--rounds R]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def measure(cmd: list[str]) -> tuple[float, int]:
    """CPU seconds and peak RSS (KiB) of one child run.

    GNU time does the fork: a child forked from this Python process would
    report Python's resident set as its peak until it execs."""
    proc = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", *cmd], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed: {proc.stderr.strip()}")
    user, system, rss = proc.stderr.strip().splitlines()[-1].split()
    return float(user) + float(system), int(rss)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loops", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()

    subprocess.run(["make", "-s", "-C", str(REPO), "probe"], check=True)
    probe = str(REPO / "build/probe/rtvb-probe")
    ours_cmd = [probe, "latency", "--interval-us", "500", "--loops", str(args.loops), "--cpus", "0",
                "--priority", "80"]
    theirs_cmd = ["cyclictest", "-q", "-m", "-p80", "-i500", "-d0", f"-l{args.loops}", "-t1", "-a0"]

    ours, theirs, ratios, rss_ours, rss_theirs = [], [], [], [], []
    for _ in range(args.rounds):
        cpu_a, rss_a = measure(ours_cmd)
        cpu_b, rss_b = measure(theirs_cmd)
        ours.append(cpu_a / args.loops * 1e9)
        theirs.append(cpu_b / args.loops * 1e9)
        ratios.append(cpu_a / cpu_b if cpu_b else float("nan"))
        rss_ours.append(rss_a)
        rss_theirs.append(rss_b)

    print(f"loops={args.loops} rounds={args.rounds} (1 thread, 500 us, SCHED_FIFO 80)")
    print(f"CPU per wake-up: rtvb-probe {statistics.median(ours):.0f} ns, "
          f"cyclictest {statistics.median(theirs):.0f} ns, "
          f"ratio (median of per-round ratios) {statistics.median(ratios):.2f}")
    print(f"peak RSS: rtvb-probe {statistics.median(rss_ours)} KiB, cyclictest {statistics.median(rss_theirs)} KiB")


if __name__ == "__main__":
    main()
