#!/usr/bin/env python3
"""Time and memory of `rtvbench report` on large latency runs, built synthetically in a store.

The store holds one run of a latency benchmark: ENVS environments x REPS repetitions, each
measurement with a result per CPU (2) and their merge, as the probe writes them (log-linear
histograms, percentiles, windows). Sample counts are histogram counts, so a run of 100 M samples
costs the store what the probe's records cost, not 100 M values. Each configuration is reported
`--rounds` times (HTML, its wall time and peak RSS from GNU time; medians).

Goal: 30 repetitions x 2 CPUs x 5 environments, about 100 M samples, in <= 2 s and <= 200 MB.
Two more configurations check the shape: the same cells with a tenth of the samples (time should
not depend on the sample count) and twice the environments (time should grow at most linearly).

usage: bench/report_speed.py [--rounds R]
"""

from __future__ import annotations

import argparse
import math
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from synthetic_runs import bucket_bounds  # noqa: E402  (the report tests' histogram scheme)

from rtvbench.campaign.reader import parse_campaign  # noqa: E402
from rtvbench.store.db import open_store  # noqa: E402
from rtvbench.store.writer import RunRecorder  # noqa: E402

INTERVAL_NS = 100_000
GOAL_S, GOAL_MB = 2.0, 200


def campaign_text(envs: int, reps: int) -> str:
    lines = [f'name = "report-speed"\nrepetitions = {reps}\n', '[environments.native]\ntarget = "local"\n']
    for i in range(1, envs):
        lines.append(f"[environments.board{i}]\ntarget = \"local\"\n")
    lines.append('[benchmarks.wakeup]\nkind = "latency"\ninterval_us = 100\nduration_s = 60\n')
    return "\n".join(lines)


def histogram(rng: np.random.Generator, median_ns: float, count: int) -> dict:
    """Counts of `count` draws of a wake-up latency distribution, in the probe's buckets, drawn
    from a 200 000-value sample scaled up: the shape is what the report reads, not each value."""
    draws = 800 + rng.lognormal(math.log(median_ns), 0.35, 200_000)
    spikes = rng.random(200_000) < 2e-4
    draws[spikes] += rng.uniform(50_000, 150_000, spikes.sum())
    lo, hi = bucket_bounds(np.round(draws).astype(np.int64))
    uniq, idx, n = np.unique(lo, return_index=True, return_counts=True)
    scaled = np.maximum(1, np.round(n * (count / 200_000))).astype(np.int64)
    return {"buckets": [[int(a), int(hi[i]), int(c)] for a, i, c in zip(uniq, idx, scaled)],
            "values": draws, "count": int(scaled.sum())}


def result(cpu, h: dict) -> dict:
    v = np.sort(h["values"])
    pick = lambda p: int(v[min(len(v) - 1, int(math.ceil(p / 100 * len(v))) - 1)])  # noqa: E731
    return {"type": "result", "cpu": cpu, "count": h["count"], "missed": 0, "min_ns": int(v[0]),
            "max_ns": int(v[-1]), "avg_ns": float(v.mean()), "stddev_ns": float(v.std()),
            **{f"{k}_ns": pick(p) for k, p in (("p50", 50), ("p90", 90), ("p99", 99), ("p999", 99.9),
                                                ("p9999", 99.99), ("p99999", 99.999), ("p999999", 99.9999))},
            "over": {"100000": int((v > 100_000).sum() * h["count"] / len(v))},
            "histogram": {"scheme": "log-linear", "sub_bucket_bits": 8, "buckets": h["buckets"]}}


def build_store(url: str, envs: int, reps: int, samples: int) -> None:
    campaign = parse_campaign(campaign_text(envs, reps))
    engine = open_store(url)
    run = RunRecorder.create(engine, campaign)
    rng = np.random.default_rng(1)
    per_cpu = samples // (envs * reps * 2)
    for e, env in enumerate(campaign.environments):
        run.add_fingerprint(env, {"kind": "local"}, {"type": "sysinfo", "hostname": env,
                                                     "kernel": {"release": "6.1.0"}}, None)
        for rep in range(reps):
            m = run.start_measurement(environment=env, load="idle", benchmark="wakeup", kind="latency",
                                      repetition=rep, attempt=1, order_index=e * reps + rep,
                                      command=["rtvb-probe", "latency"], load_commands=[])
            params = {"interval_ns": INTERVAL_NS, "duration_ns": 60 * 10**9, "loops": 0, "priority": 80,
                      "policy": "fifo", "cpus": [0, 1], "thresholds_ns": [100_000], "window_ns": 10**9,
                      "mode": "abstime"}
            m.add_record(0, {"type": "meta", "schema": 1, "subcommand": "latency", "params": params,
                             "privileges": {"policy": "fifo", "priority": 80, "rt_granted": True}})
            hs = [histogram(rng, 2000 + 500 * e, per_cpu) for _ in range(2)]
            merged = {"buckets": _merge(hs[0]["buckets"], hs[1]["buckets"]),
                      "values": np.concatenate([h["values"] for h in hs]), "count": hs[0]["count"] + hs[1]["count"]}
            for seq, rec in enumerate([result(0, hs[0]), result(1, hs[1]), result("all", merged)], start=1):
                m.add_record(seq, rec)
            m.add_record(4, {"type": "end", "status": "ok", "elapsed_ns": 60 * 10**9})
            m.finish("ok", 0)
    run.set_status("finished")


def _merge(a: list, b: list) -> list:
    out: dict[tuple[int, int], int] = {}
    for lo, hi, c in a + b:
        out[(lo, hi)] = out.get((lo, hi), 0) + c
    return [[lo, hi, c] for (lo, hi), c in sorted(out.items())]


def report(url: str, out: Path) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB, 10^6 bytes) of one `rtvbench report`."""
    proc = subprocess.run(["/usr/bin/time", "-f", "%e %M", sys.executable, "-m", "rtvbench", "--store", url,
                           "report", "-o", str(out)], capture_output=True, text=True, cwd=REPO)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"report failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    wall, rss = proc.stderr.strip().splitlines()[-1].split()
    return float(wall), int(rss) * 1024 / 1e6          # GNU time's %M is in KiB


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    configs = [("goal: 5 envs x 30 reps x 2 CPUs, 100 M samples", 5, 30, 100_000_000),
               ("the same cells, 10 M samples", 5, 30, 10_000_000),
               ("twice the environments, 100 M samples", 10, 30, 100_000_000)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, (label, envs, reps, samples) in enumerate(configs):
            url = f"sqlite:///{tmp}/store{i}.db"
            build_store(url, envs, reps, samples)
            runs = [report(url, Path(tmp) / f"r{i}.html") for _ in range(args.rounds)]
            rows.append((label, statistics.median(w for w, _ in runs), statistics.median(m for _, m in runs)))
    print(f"rtvbench report (HTML), medians of {args.rounds} rounds")
    for label, wall, rss in rows:
        print(f"{label:48} {wall:6.2f} s {rss:7.0f} MB")
    goal_wall, goal_rss = rows[0][1], rows[0][2]
    print(f"goal (<= {GOAL_S:g} s, <= {GOAL_MB} MB): {'met' if goal_wall <= GOAL_S and goal_rss <= GOAL_MB else 'missed'};"
          f" time with a tenth of the samples {rows[1][1] / goal_wall:.2f}x, with twice the cells "
          f"{rows[2][1] / goal_wall:.2f}x")


if __name__ == "__main__":
    main()
