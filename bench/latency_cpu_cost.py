#!/usr/bin/env python3
"""Per-wake-up CPU cost of `rtvb-probe latency` vs. cyclictest, and peak RSS.

Both run the same measurement (one thread on CPU 0, SCHED_FIFO 80, 500 us
interval, N loops), alternately (the order flips every round), several rounds;
CPU time (user + system) and peak RSS of each child come from GNU time.
Reported: medians, and the median and range of the per-round ratios probe /
cyclictest with the load average (the machine is shared, so ratios in one run
are what to compare); the rows go to build/bench/latency_cpu_cost.json.

usage: bench/latency_cpu_cost.py [--loops N] [--rounds R]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from figures import BenchFile, alternating, describe  # noqa: E402


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

    out = BenchFile(__file__)
    pairs = alternating(args.rounds, lambda: measure(ours_cmd), lambda: measure(theirs_cmd))
    ours = [cpu / args.loops * 1e9 for (cpu, _), _ in pairs]
    theirs = [cpu / args.loops * 1e9 for _, (cpu, _) in pairs]
    rows = [out.add("CPU time per wake-up, rtvb-probe latency / cyclictest", "cyclictest, same loops, CPU, priority",
                    [a / b for a, b in zip(ours, theirs)]),
            out.add("peak RSS, rtvb-probe latency / cyclictest", "cyclictest, same loops, CPU, priority",
                    [a / b for (_, a), (_, b) in pairs])]
    out.write()
    print(f"loops={args.loops} rounds={args.rounds} (1 thread, 500 us, SCHED_FIFO 80), {out.load_text()}")
    print(f"CPU per wake-up: rtvb-probe {statistics.median(ours):.0f} ns, cyclictest {statistics.median(theirs):.0f} ns")
    print(f"peak RSS: rtvb-probe {statistics.median(a for (_, a), _ in pairs)} KiB, "
          f"cyclictest {statistics.median(b for _, (_, b) in pairs)} KiB")
    for row in rows:
        print(f"  {describe(row)}")

if __name__ == "__main__":
    main()
