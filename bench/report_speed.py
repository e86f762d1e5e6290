#!/usr/bin/env python3
"""What `rtvbench report` costs: its fixed CPU, its CPU per measurement, and the PDF against the HTML.

Stores hold one run of a latency benchmark built synthetically from the probe's records (log-linear
histograms, percentiles, windows; sample counts are histogram counts, so a run of 100 M samples costs
the store what the probe's records cost, not 100 M values): 10 measurements (2 environments x 5
repetitions) and 100 (5 x 20), each with a result per CPU (2) and their merge. Every round runs, in
an order that flips each round, a bare `python -c pass`, the HTML report of both runs without plots
(`--no-plots`) and with them, and the PDF and HTML of the small run; CPU time and peak RSS from GNU
time. Per round, the CPU per measurement is the slope between the two runs, the fixed cost the small
run's CPU less 10 times that slope and less the bare interpreter's CPU. Every command runs once
before timing, its bytecode cached (bench/bytecode.py).

Goals: fixed cost <= 0.4 s of CPU without plots and <= 1 s with them, beyond the interpreter start;
the PDF within 2x the HTML's wall time. Medians and ranges over the rounds; rows also go to
build/bench/report_speed.json.

usage: bench/report_speed.py [--rounds R]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from synthetic_runs import bucket_bounds  # noqa: E402  (the report tests' histogram scheme)

sys.path.insert(0, str(REPO / "bench"))
from bytecode import cached_bytecode_env  # noqa: E402
from figures import ratio_row, write_rows  # noqa: E402

from rtvbench.campaign.reader import parse_campaign  # noqa: E402
from rtvbench.store.db import open_store  # noqa: E402
from rtvbench.store.writer import RunRecorder  # noqa: E402

INTERVAL_NS = 100_000
SMALL, LARGE = (2, 5), (5, 20)          # environments x repetitions: 10 and 100 measurements


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


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system) and peak RSS (MB, 10^6 bytes) of one command."""
    proc = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M", *argv], capture_output=True, text=True, cwd=REPO,
                          env=env)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{argv[1:4]} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    wall, user, system, rss = proc.stderr.strip().splitlines()[-1].split()
    return float(wall), float(user) + float(system), int(rss) * 1024 / 1e6     # GNU time's %M is in KiB


def report(url: str, out: Path, *options: str) -> list[str]:
    return [sys.executable, "-m", "rtvbench", "--store", url, "report", "-o", str(out), *options]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        small, large = f"sqlite:///{tmp}/small.db", f"sqlite:///{tmp}/large.db"
        build_store(small, *SMALL, 10_000_000)
        build_store(large, *LARGE, 100_000_000)
        out = Path(tmp)
        steps = {"floor": [sys.executable, "-c", "pass"],
                 "small bare": report(small, out / "s.html", "--no-plots"),
                 "large bare": report(large, out / "l.html", "--no-plots"),
                 "small plots": report(small, out / "s.html"),
                 "large plots": report(large, out / "l.html"),
                 "small pdf": report(small, out / "s.pdf", "--format", "pdf")}
        env = cached_bytecode_env(out / "bytecode")
        for argv in steps.values():
            timed(argv, env)                   # each once: it works, and its bytecode is cached
        runs: dict[str, list[tuple[float, float, float]]] = {name: [] for name in steps}
        for rnd in range(args.rounds):
            order = list(steps.items())
            for name, argv in (reversed(order) if rnd % 2 else order):
                runs[name].append(timed(argv, env))
    load_after = os.getloadavg()
    n_small, n_large = SMALL[0] * SMALL[1], LARGE[0] * LARGE[1]
    cpu = {name: [c for _, c, _ in values] for name, values in runs.items()}
    rows = []
    for mode, goal in (("bare", 0.4), ("plots", 1.0)):
        per = [(b - a) / (n_large - n_small) for a, b in zip(cpu[f"small {mode}"], cpu[f"large {mode}"])]
        fixed = [a - n_small * p - f for a, p, f in zip(cpu[f"small {mode}"], per, cpu["floor"])]
        what = "HTML without plots (--no-plots)" if mode == "bare" else "HTML with plots"
        rows.append(ratio_row(f"report {what}: fixed CPU s beyond the interpreter start",
                              "python -c pass CPU, same round", fixed, f"<= {goal:g}"))
        rows.append(ratio_row(f"report {what}: CPU ms per measurement (slope 10 -> 100)",
                              "the same report of 10 measurements, same round", [p * 1000 for p in per], None))
    pdf = [p[0] / h[0] for p, h in zip(runs["small pdf"], runs["small plots"])]
    rows.append(ratio_row("report PDF / HTML wall time (10 measurements, with plots)", "the HTML report, same round",
                          pdf, "<= 2"))
    print(f"rtvbench report, {args.rounds} rounds in alternating order, load average {load_before[0]:.2f} "
          f"before, {load_after[0]:.2f} after")
    for row in rows:
        verdict = {True: "met", False: "missed", None: ""}[row["met"]]
        print(f"{row['figure']:78} {row['median']:8.3f} ({row['min']:.3f}-{row['max']:.3f}) "
              f"{row['goal'] or '':>6} {verdict}")
    for name, values in runs.items():
        print(f"  {name:12} median wall {statistics.median(w for w, _, _ in values):6.2f} s, CPU "
              f"{statistics.median(c for _, c, _ in values):6.2f} s, peak RSS "
              f"{statistics.median(m for _, _, m in values):5.0f} MB")
    write_rows("report_speed", load_before, load_after, rows)


if __name__ == "__main__":
    main()
