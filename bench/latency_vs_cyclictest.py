#!/usr/bin/env python3
"""Wake-up latency of `rtvb-probe latency` against cyclictest and a bare clock_nanosleep loop.

The three measure the same thing (one thread on CPU C, SCHED_FIFO 80, I us period, N wake-ups,
memory locked, /dev/cpu_dma_latency at 0) in alternating rounds (the order rotates every round).
Per run: the minimum, the 1st percentile and the median (cyclictest's from its 1-us histogram).
Reported: the medians over rounds, the range of the per-run minima (a minimum is one sample of
thousands: on a VM it moves by microseconds from run to run) and the per-round ratios against
cyclictest, with the load average; the ratios of the probe to cyclictest (median, p1) and to the
bare loop (median), with their ranges, go to build/bench/latency_vs_cyclictest.json. Needs root.

usage: bench/latency_vs_cyclictest.py [--loops N] [--rounds R] [--interval-us I] [--cpu C]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from figures import BenchFile, describe  # noqa: E402
BARE = REPO / "build/bench/bare_wakeup"
STATS = ("min_ns", "p1_ns", "p50_ns")


def from_histogram(counts: dict[int, int]) -> dict[str, int]:
    """min, 1st percentile and median (nearest rank) of a {value: count} histogram."""
    total, seen, out = sum(counts.values()), 0, {}
    ranks = {"p1_ns": max(1, -(-total // 100)), "p50_ns": max(1, -(-total // 2))}
    for value in sorted(counts):
        seen += counts[value]
        out.setdefault("min_ns", value)
        for name, rank in ranks.items():
            if seen >= rank:
                out.setdefault(name, value)
    return out


def probe(args) -> dict[str, int]:
    out = subprocess.run([str(REPO / "build/probe/rtvb-probe"), "latency", "--interval-us", str(args.interval_us),
                          "--loops", str(args.loops), "--cpus", str(args.cpu), "--priority", "80"],
                         capture_output=True, text=True, check=True).stdout
    (r,) = [r for r in map(json.loads, out.splitlines()) if r.get("type") == "result" and r.get("cpu") == args.cpu]
    counts: dict[int, int] = {}
    for lo, hi, c in r["histogram"]["buckets"]:
        counts[(lo + hi - 1) // 2] = counts.get((lo + hi - 1) // 2, 0) + c
    return {**from_histogram(counts), "min_ns": r["min_ns"], "p50_ns": r["p50_ns"]}


def cyclictest(args) -> dict[str, int]:
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run(["cyclictest", "-q", "-m", "-p80", f"-i{args.interval_us}", "-d0", f"-l{args.loops}", "-t1",
                        f"-a{args.cpu}", "-h", "2000", f"--json={f.name}"], capture_output=True, check=True)
        thread = json.load(open(f.name))["thread"]["0"]
    counts = {int(us) * 1000: c for us, c in thread["histogram"].items()}
    return {**from_histogram(counts), "min_ns": thread["min"] * 1000}


def bare(args) -> dict[str, int]:
    out = subprocess.run([str(BARE), str(args.loops), str(args.interval_us), str(args.cpu)],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loops", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--interval-us", type=int, default=1000)
    ap.add_argument("--cpu", type=int, default=1)
    args = ap.parse_args()
    subprocess.run(["make", "-s", "-C", str(REPO), "probe"], check=True)
    BARE.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cc", "-O2", "-o", str(BARE), str(REPO / "bench/bare_wakeup.c")], check=True)
    tools = {"rtvb-probe": probe, "cyclictest": cyclictest, "bare loop": bare}
    runs: dict[str, list[dict[str, int]]] = {name: [] for name in tools}
    out = BenchFile(__file__)
    names = list(tools)
    for rnd in range(args.rounds):
        for name in names[rnd % 3:] + names[:rnd % 3]:
            runs[name].append(tools[name](args))
    ours = runs["rtvb-probe"]
    rows = [out.add(f"wake-up latency {stat[:-3]}, rtvb-probe latency / {peer}", f"{peer}, same CPU, period, priority",
                    [a[stat] / b[stat] for a, b in zip(ours, runs[peer])])
            for peer, stat in (("cyclictest", "p50_ns"), ("cyclictest", "p1_ns"), ("bare loop", "p50_ns"))]
    out.write()
    print(f"wake-up latency, {args.loops} wake-ups of {args.interval_us} us on CPU {args.cpu}, {args.rounds} "
          f"rotating rounds, {out.load_text()}; microseconds, medians over rounds")
    print(f"{'':12} {'min':>6} {'(range of minima)':>18} {'p1':>6} {'p50':>6} {'p50 / cyclictest':>17}")
    for name, values in runs.items():
        med = {s: statistics.median(v[s] for v in values) / 1000 for s in STATS}
        mins = [v["min_ns"] / 1000 for v in values]
        ratio = statistics.median(a["p50_ns"] / b["p50_ns"] for a, b in zip(values, runs["cyclictest"]))
        print(f"{name:12} {med['min_ns']:6.1f} {min(mins):8.1f}..{max(mins):<8.1f} {med['p1_ns']:6.1f} "
              f"{med['p50_ns']:6.1f} {ratio:17.2f}")
    for row in rows:
        print(f"  {describe(row)}")


if __name__ == "__main__":
    main()
