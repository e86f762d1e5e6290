#!/usr/bin/env python3
"""What trace capture costs the wake-up path: `rtvb-probe latency` with and without
--trace-threshold-us, alternating.

Both runs measure one thread on one CPU (SCHED_FIFO 80, 500 us interval, N loops); the traced one
records the probe's event set and writes a marker per activation, with a threshold high enough
(100 ms) that the cost is the recording, not the saving of traces. Per round: the median wake-up
latency (the result's p50) and the CPU time per wake-up (user + system from GNU time / activations)
of each run, their differences and their ratios traced / plain within the round (the machine is
shared: what one round compares is what to read), with the load average; the ratios go to
build/bench/trace_cost.json. Needs root and tracefs.

usage: bench/trace_cost.py [--loops N] [--rounds R] [--cpu C]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from figures import BenchFile, alternating, describe  # noqa: E402


def run(cmd: list[str]) -> tuple[float, float, bool]:
    """(median latency in us, CPU ns per activation, whether tracing was granted) of one run."""
    proc = subprocess.run(["/usr/bin/time", "-f", "%U %S", *cmd], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"the probe failed: {proc.stderr.strip()}")
    user, system = proc.stderr.strip().splitlines()[-1].split()
    recs = [json.loads(line) for line in proc.stdout.splitlines()]
    merged = next(r for r in recs if r["type"] == "result" and r["cpu"] == "all")
    traced = bool(recs[0]["privileges"].get("trace"))
    activations = merged["count"] + merged["missed"]
    return merged["p50_ns"] / 1000, (float(user) + float(system)) / activations * 1e9, traced


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loops", type=int, default=6000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)))
    args = ap.parse_args()

    subprocess.run(["make", "-s", "-C", str(REPO), "probe"], check=True)
    base = [str(REPO / "build/probe/rtvb-probe"), "latency", "--interval-us", "500", "--loops", str(args.loops),
            "--cpus", str(args.cpu), "--priority", "80"]
    traced_cmd = base + ["--trace-threshold-us", "100000"]

    def traced() -> tuple[float, float]:
        lat, cpu, granted = run(traced_cmd)
        if not granted:
            raise SystemExit("trace capture was not granted (run as root on a kernel with tracefs)")
        return lat, cpu

    out = BenchFile(__file__)
    pairs = alternating(args.rounds, traced, lambda: run(base)[:2])
    lat_plain, cpu_plain = [p[0] for _, p in pairs], [p[1] for _, p in pairs]
    lat_traced, cpu_traced = [t[0] for t, _ in pairs], [t[1] for t, _ in pairs]
    d_lat = [t - p for t, p in zip(lat_traced, lat_plain)]
    d_cpu = [t - p for t, p in zip(cpu_traced, cpu_plain)]
    baseline = "the same latency run without trace capture"
    rows = [out.add("median wake-up latency, traced / plain", baseline,
                    [t / p for t, p in zip(lat_traced, lat_plain)]),
            out.add("CPU time per wake-up, traced / plain", baseline,
                    [t / p for t, p in zip(cpu_traced, cpu_plain)])]
    out.write()
    print(f"loops={args.loops} rounds={args.rounds} (1 thread on CPU {args.cpu}, 500 us, SCHED_FIFO 80), "
          f"{out.load_text()}")
    print(f"median wake-up latency: without {statistics.median(lat_plain):.2f} us, "
          f"with tracing {statistics.median(lat_traced):.2f} us, "
          f"added {statistics.median(d_lat):+.2f} us (median of per-round differences; "
          f"range {min(d_lat):+.2f}..{max(d_lat):+.2f})")
    print(f"CPU per wake-up: without {statistics.median(cpu_plain):.0f} ns, "
          f"with tracing {statistics.median(cpu_traced):.0f} ns, "
          f"added {statistics.median(d_cpu):+.0f} ns (range {min(d_cpu):+.0f}..{max(d_cpu):+.0f})")
    for row in rows:
        print(f"  {describe(row)}")

if __name__ == "__main__":
    main()
