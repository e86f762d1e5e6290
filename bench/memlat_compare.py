#!/usr/bin/env python3
"""rtvb-probe mem-lat's random chain against a plain random pointer chase (bench/random_chase.c).

Per size, the probe (`mem-lat --sizes S --mode random`) and the reference run alternately (the
order flips every round); reported: both medians, the median of the per-round ratios probe /
reference and their range, and the load average. Other processes' memory traffic raises both
sides of a round alike, so compare ratios, not single values. The ratios go to
build/bench/memlat_compare.json.

usage: bench/memlat_compare.py [--rounds R] [--sizes-mib 16,64,128,256]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from figures import BenchFile  # noqa: E402
CHASE = REPO / "build/bench/random_chase"


def probe(size_mib: int) -> float:
    out = subprocess.run([str(REPO / "build/probe/rtvb-probe"), "mem-lat", "--sizes", f"{size_mib}m", "--mode",
                          "random"], capture_output=True, text=True, check=True).stdout
    (r,) = [r for r in map(json.loads, out.splitlines()) if r.get("type") == "result"]
    return r["ns_per_access"]


def reference(size_mib: int) -> float:
    out = subprocess.run([str(CHASE), str(size_mib)], capture_output=True, text=True, check=True).stdout
    return json.loads(out)["ns_per_load"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sizes-mib", default="16,64,128,256")
    args = ap.parse_args()
    subprocess.run(["make", "-s", "-C", str(REPO), "probe"], check=True)
    CHASE.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cc", "-O2", "-o", str(CHASE), str(REPO / "bench/random_chase.c")], check=True)
    sizes = [int(s) for s in args.sizes_mib.split(",")]
    ours: dict[int, list[float]] = {s: [] for s in sizes}
    theirs: dict[int, list[float]] = {s: [] for s in sizes}
    out = BenchFile(__file__)
    for rnd in range(args.rounds):
        for size in sizes:
            pair = (probe, reference) if rnd % 2 == 0 else (reference, probe)
            values = {fn: fn(size) for fn in pair}
            ours[size].append(values[probe])
            theirs[size].append(values[reference])
    for size in sizes:
        out.add(f"random read latency {size} MiB, mem-lat / pointer chase", "bench/random_chase.c, same size",
                [a / b for a, b in zip(ours[size], theirs[size])])
    out.write()
    print(f"mem-lat random chain vs a plain random chase: {args.rounds} alternating rounds, {out.load_text()}")
    print(f"{'size':>8} {'probe':>9} {'chase':>9} {'ratio':>6} {'range':>12}")
    for size, row in zip(sizes, out.rows):
        print(f"{size:>5} MiB {statistics.median(ours[size]):7.1f}ns {statistics.median(theirs[size]):7.1f}ns "
              f"{row['median']:6.2f} {row['min']:5.2f}..{row['max']:5.2f}")

if __name__ == "__main__":
    main()
