#!/usr/bin/env python3
"""One table: the probe against every peer installable here, side by side in rotating rounds.

Rows (probe figure / peer figure, same work):
  wake-up latency p1 and median      rtvb-probe latency / cyclictest -d0 (FIFO 80, one CPU, 1 ms)
  wake-up latency median             rtvb-probe latency / bare clock_nanosleep loop (the floor)
  CPU time per wake-up               rtvb-probe latency / cyclictest (GNU time, user + system)
  DRAM read bandwidth                rtvb-probe mem-bw read 256 MiB / stress-ng memrate read64
  DRAM write bandwidth               rtvb-probe mem-bw write 256 MiB / sysbench memory write
  random read latency at 256 MiB     rtvb-probe mem-lat random / a plain random pointer chase

How to read it: each round runs the probe and the peer one after the other, the order flipping every
round, so whatever else the machine does lands on both sides of a round alike. `ratio` is the median
of the per-round ratios probe / peer and `range` their spread; a ratio near 1 with a narrow range
says the two measure the same thing the same way; a wide range says the machine was busy (see the
load averages) and more rounds are needed. For times, below 1 means the probe saw less; for
bandwidths, above 1 means the probe moved more. The table is also written to build/bench/peers.md,
and its ratios to build/bench/peers.json (bench/figures.py).

usage: bench/peers.py [--rounds R]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

import latency_vs_cyclictest as lat  # noqa: E402
import memlat_compare as chase  # noqa: E402
from figures import BenchFile  # noqa: E402

PROBE = REPO / "build/probe/rtvb-probe"
MiB = 1 << 20
LOOPS, CPU = 4000, 1


def cpu_seconds(cmd: list[str]) -> float:
    proc = subprocess.run(["/usr/bin/time", "-f", "%U %S", *cmd], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, check=True)
    user, system = proc.stderr.strip().splitlines()[-1].split()
    return float(user) + float(system)


def probe_mibps(op: str) -> float:
    out = subprocess.run([str(PROBE), "mem-bw", "--ops", op, "--sizes", "256M", "--quick"], capture_output=True,
                         text=True, check=True).stdout
    (r,) = [r for r in map(json.loads, out.splitlines()) if r.get("type") == "result" and r.get("thread") == 0]
    return r["mean_bps"] / MiB


def sysbench_write_mibps() -> float:
    out = subprocess.run(["sysbench", "memory", "--memory-block-size=256M", "--memory-total-size=8G",
                          "--memory-oper=write", "--memory-access-mode=seq", "--threads=1", "--time=60", "run"],
                         capture_output=True, text=True, check=True).stdout
    return float(re.search(r"\(([\d.]+) MiB/sec\)", out).group(1))


def stress_ng_read_mibps() -> float:
    proc = subprocess.run(["stress-ng", "--memrate", "1", "--memrate-bytes", "256M", "-t", "2", "--metrics"],
                          capture_output=True, text=True)
    return float(re.search(r"memrate\s+([\d.]+) read64 MB per sec", proc.stdout + proc.stderr).group(1))


FLIP = {"peer_first": False}   # flipped every round by main()


def both(ours: Callable[[], float], theirs: Callable[[], float]) -> tuple[float, float]:
    """One paired measurement, in this round's order: (probe, peer)."""
    if FLIP["peer_first"]:
        b = theirs()
        return ours(), b
    a = ours()
    return a, theirs()


def pairs(args) -> list[tuple[str, str, str, Callable[[], tuple[float, float]]]]:
    """(figure, peer, unit, one paired measurement -> (probe, peer))."""
    opts = SimpleNamespace(loops=LOOPS, interval_us=1000, cpu=CPU)
    probe_lat = [str(PROBE), "latency", "--interval-us", "1000", "--loops", str(LOOPS), "--cpus", str(CPU),
                 "--priority", "80"]
    cyclic = ["cyclictest", "-q", "-m", "-p80", "-i1000", "-d0", f"-l{LOOPS}", "-t1", f"-a{CPU}"]
    shared: dict[str, dict] = {}

    def latency_pair() -> tuple[float, float]:
        shared["probe"], shared["cyclictest"] = both(lambda: lat.probe(opts), lambda: lat.cyclictest(opts))
        return shared["probe"]["p50_ns"] / 1e3, shared["cyclictest"]["p50_ns"] / 1e3

    rows = [
        ("wake-up latency median", "cyclictest -d0", "us", latency_pair),
        ("wake-up latency p1", "cyclictest -d0", "us",
         lambda: (shared["probe"]["p1_ns"] / 1e3, shared["cyclictest"]["p1_ns"] / 1e3)),
        ("wake-up latency median", "bare clock_nanosleep loop", "us",
         lambda: both(lambda: lat.probe(opts)["p50_ns"] / 1e3, lambda: lat.bare(opts)["p50_ns"] / 1e3)),
        ("CPU time per wake-up", "cyclictest -d0", "us",
         lambda: both(lambda: cpu_seconds(probe_lat) / LOOPS * 1e6, lambda: cpu_seconds(cyclic) / LOOPS * 1e6)),
        ("random read latency 256 MiB", "random pointer chase", "ns",
         lambda: both(lambda: chase.probe(256), lambda: chase.reference(256))),
    ]
    if shutil.which("stress-ng"):
        rows.append(("DRAM read bandwidth", "stress-ng memrate read64", "MiB/s",
                     lambda: both(lambda: probe_mibps("read"), stress_ng_read_mibps)))
    if shutil.which("sysbench"):
        rows.append(("DRAM write bandwidth", "sysbench memory write", "MiB/s",
                     lambda: both(lambda: probe_mibps("write"), sysbench_write_mibps)))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    subprocess.run(["make", "-s", "-C", str(REPO), "probe"], check=True)
    (REPO / "build/bench").mkdir(parents=True, exist_ok=True)
    subprocess.run(["cc", "-O2", "-o", str(lat.BARE), str(REPO / "bench/bare_wakeup.c")], check=True)
    subprocess.run(["cc", "-O2", "-o", str(chase.CHASE), str(REPO / "bench/random_chase.c")], check=True)
    rows = pairs(args)
    values: list[list[tuple[float, float]]] = [[] for _ in rows]
    out = BenchFile(__file__)
    for rnd in range(args.rounds):
        FLIP["peer_first"] = bool(rnd % 2)
        for i, (_, _, _, measure) in enumerate(rows):
            a, b = measure()
            values[i].append((a, b))
    for (figure, peer, _, _), vals in zip(rows, values):
        out.add(f"{figure}, rtvb-probe / {peer}", peer, [a / b for a, b in vals])
    out.write()
    lines = [f"rtvb-probe against its peers: {args.rounds} rounds, {out.load_text()}",
             "", "| figure | peer | probe | peer | ratio | range |", "|---|---|---|---|---|---|"]
    for (figure, peer, unit, _), vals, row in zip(rows, values, out.rows):
        lines.append(f"| {figure} | {peer} | {statistics.median(a for a, _ in vals):.1f} {unit} | "
                     f"{statistics.median(b for _, b in vals):.1f} {unit} | {row['median']:.2f} | "
                     f"{row['min']:.2f}..{row['max']:.2f} |")
    text = "\n".join(lines) + "\n"
    (REPO / "build/bench/peers.md").write_text(text)
    print(text, end="")

if __name__ == "__main__":
    main()
