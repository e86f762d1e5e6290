"""Synthetic campaign runs for analysis and report tests.

Builds `CampaignRun` objects whose latency measurements look like the probe's
output (docs/probe-output.md): a merged `cpu: "all"` result with exact
extremes, nearest-rank percentiles, an `over` map keyed by ns strings, and the
log-linear histogram encoding; plus window records and warnings.
"""

from __future__ import annotations

import copy
import math
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

import numpy as np

from rtvbench.campaign.reader import spec_of
from rtvbench.results import CampaignRun, Measurement

PERCENTILES = {"p50": 50, "p90": 90, "p99": 99, "p999": 99.9, "p9999": 99.99,
               "p99999": 99.999, "p999999": 99.9999}


def bucket_bounds(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The probe's log-linear buckets: width 1 below 256 ns, 128 buckets per power of two above."""
    v = np.asarray(values, dtype=np.int64)
    exponent = np.frexp(np.maximum(v, 1).astype(np.float64))[1] - 1     # floor(log2 v), exact below 2**53
    shift = np.where(v < 256, 0, exponent - 7)
    lo = (v >> shift) << shift
    return lo, lo + (np.int64(1) << shift)


def histogram_record(values: np.ndarray) -> dict[str, Any]:
    lo, hi = bucket_bounds(values)
    uniq, idx, counts = np.unique(lo, return_index=True, return_counts=True)
    buckets = [[int(a), int(hi[i]), int(c)] for a, i, c in zip(uniq, idx, counts)]
    return {"scheme": "log-linear", "sub_bucket_bits": 8, "buckets": buckets}


def nearest_rank(sorted_values: np.ndarray, p: float) -> int:
    # ceil(p/100 * n) in integers, as the probe computes it (p has at most 4 decimals).
    rank = max(1, -(-round(p * 10000) * len(sorted_values) // 1_000_000))
    return int(sorted_values[rank - 1])


def latency_result(values: np.ndarray, cpu: Any = "all", missed: int = 0,
                   thresholds_ns: tuple[int, ...] = (100_000,)) -> dict[str, Any]:
    v = np.sort(np.asarray(values, dtype=np.int64))
    r: dict[str, Any] = {"type": "result", "cpu": cpu, "count": int(len(v)), "missed": missed}
    if len(v) == 0:
        r.update({k: None for k in ("min_ns", "max_ns", "avg_ns", "stddev_ns")})
        r.update({f"{k}_ns": None for k in PERCENTILES})
        r["over"] = {str(t): 0 for t in thresholds_ns}
        r["histogram"] = {"scheme": "log-linear", "sub_bucket_bits": 8, "buckets": []}
        return r
    r.update(min_ns=int(v[0]), max_ns=int(v[-1]), avg_ns=float(v.mean()), stddev_ns=float(v.std()))
    for k, p in PERCENTILES.items():
        r[f"{k}_ns"] = nearest_rank(v, p)
    r["over"] = {str(t): int((v > t).sum()) for t in thresholds_ns}
    r["histogram"] = histogram_record(v)
    return r


def windows(values: np.ndarray, interval_ns: int, window_ns: int, cpu: int = 0) -> list[dict[str, Any]]:
    per = max(1, window_ns // interval_ns)
    out = []
    for i, start in enumerate(range(0, len(values), per)):
        chunk = np.sort(values[start:start + per])
        out.append({"type": "window", "cpu": cpu, "index": i, "t_start_ns": i * window_ns,
                    "t_end_ns": (i + 1) * window_ns, "count": int(len(chunk)), "missed": 0,
                    "min_ns": int(chunk[0]), "max_ns": int(chunk[-1]), "p99_ns": nearest_rank(chunk, 99)})
    return out


def lognormal_latency(median_ns: float, sigma: float = 0.35, floor_ns: int = 800,
                      spike_rate: float = 0.0, spike_ns: float = 0.0) -> Callable[[np.random.Generator, int], np.ndarray]:
    """A wake-up latency distribution: a floor plus a log-normal body plus rare spikes."""
    def draw(rng: np.random.Generator, n: int) -> np.ndarray:
        v = floor_ns + rng.lognormal(math.log(median_ns), sigma, n)
        if spike_rate:
            hit = rng.random(n) < spike_rate
            v[hit] += rng.uniform(0.5, 1.0, hit.sum()) * spike_ns
        return np.round(v).astype(np.int64)
    return draw


DEFAULT_CAMPAIGN: dict[str, Any] = {
    "name": "native-vs-guest",
    "repetitions": 5,
    "seed": 1,
    "environments": {"native": {"target": "local"},
                     "guest": {"target": "qemu", "arch": "aarch64", "cpus": 2, "memory_mb": 512}},
    "loads": {"idle": {}, "stress": {"command": "stress-ng --cpu 2 --cpu-method matrixprod", "where": "same"}},
    "benchmarks": {"wakeup": {"kind": "latency", "interval_us": 200, "duration_s": 10, "priority": 80}},
    "requirements": [],
}


def build_run(campaign: dict[str, Any] | None = None,
              distributions: dict[tuple[str, str], Callable] | None = None,
              repetitions: int = 5, samples: int = 20_000, seed: int = 7,
              benchmark: str = "wakeup", interval_ns: int = 200_000, window_ns: int = 400_000_000,
              thresholds_ns: tuple[int, ...] = (100_000,),
              status: dict[tuple[str, str, int], str] | None = None,
              warnings: dict[tuple[str, str], list[dict[str, Any]]] | None = None,
              fingerprints: dict[str, dict[str, Any]] | None = None) -> CampaignRun:
    """A finished run: every (environment, load) of `distributions` x `repetitions` measurements.

    `status` overrides the status of single repetitions ("error" measurements
    get no results and an error text; "interrupted" ones keep half the samples).
    """
    campaign = campaign or DEFAULT_CAMPAIGN
    distributions = distributions or {
        ("native", "idle"): lognormal_latency(2_000),
        ("native", "stress"): lognormal_latency(5_000, spike_rate=2e-4, spike_ns=150_000),
        ("guest", "idle"): lognormal_latency(3_000),
        ("guest", "stress"): lognormal_latency(8_000, spike_rate=5e-4, spike_ns=150_000),
    }
    status = status or {}
    warnings = warnings or {}
    rng = np.random.default_rng(seed)
    t0 = datetime(2024, 6, 1, 12, 0, tzinfo=timezone.utc)
    measurements = []
    mid = 0
    for (env, load), draw in distributions.items():
        load_table = campaign.get("loads", {}).get(load, {})
        for rep in range(repetitions):
            mid += 1
            st = status.get((env, load, rep), "ok")
            values = draw(rng, samples)
            if st == "interrupted":
                values = values[: samples // 2]
            cpu_split = np.array_split(values, 2)
            results = [] if st == "error" else (
                [latency_result(part, cpu=i, thresholds_ns=thresholds_ns) for i, part in enumerate(cpu_split)]
                + [latency_result(values, thresholds_ns=thresholds_ns)])
            command = ["rtvb-probe", "latency", "--interval-us", str(interval_ns // 1000), "--duration-s", "10",
                       "--priority", "80", "--json"]
            meta = {"type": "meta", "schema": 1, "subcommand": "latency", "argv": command,
                    "params": {"interval_ns": interval_ns, "duration_ns": 10_000_000_000, "loops": 0,
                               "priority": 80, "policy": "fifo", "cpus": [0, 1], "thresholds_ns": list(thresholds_ns),
                               "window_ns": window_ns, "mode": "abstime"},
                    "privileges": {"policy": "fifo", "priority": 80, "rt_granted": True, "mlockall": True}}
            measurements.append(Measurement(
                id=mid, environment=env, load=load, benchmark=benchmark, kind="latency", repetition=rep,
                status=st, command=command,
                load_commands=[load_table["command"]] if "command" in load_table else [],
                started_at=t0 + timedelta(seconds=11 * mid), finished_at=t0 + timedelta(seconds=11 * mid + 10),
                meta=meta, results=results,
                windows=[] if st == "error" else windows(values, interval_ns, window_ns),
                warnings=list(warnings.get((env, load), [])),
                error="probe exited with status 3: cannot open /dev/cpu_dma_latency" if st == "error" else None))
    fingerprints = fingerprints if fingerprints is not None else {
        env: {"type": "sysinfo", "hostname": f"{env}-host", "kernel": {"release": "6.1.0-rt" if env == "native" else "6.1.0",
                                                                     "preempt": "PREEMPT_RT"},
              "cpu": {"model": "Cortex-A57", "count": 4 if env == "native" else 2}}
        for env in campaign.get("environments", {})}
    return CampaignRun(id=42, campaign_name=campaign.get("name", "?"), campaign_text="# synthetic\n",
                       campaign=campaign, spec=spec_of(campaign), status="finished", started_at=t0,
                       finished_at=t0 + timedelta(seconds=11 * mid + 10),
                       fingerprints=fingerprints, measurements=measurements)


# Runs for the report tests: a typical one with verdicts of every colour, and a hostile one.

HOSTILE_ENV = "<script>alert(1)</script>"
HOSTILE_LOAD = 'x"><img src=x onerror=alert(2)>'
HOSTILE_COMMAND = "stress-ng --cpu 1 </pre><script>alert(3)</script>"
HOSTILE_HOST = "<b>bold-host</b>"


def typical_run():
    campaign = copy.deepcopy(DEFAULT_CAMPAIGN)
    campaign["requirements"] = [
        {"metric": "wakeup.max_us", "loads": ["idle"], "max": 100},                       # PASS
        {"metric": "wakeup.max_us", "environments": ["guest"], "loads": ["stress"], "max": 100},   # FAIL
        {"metric": "wakeup.p99999_us", "max": 100},                                       # INCONCLUSIVE
        {"overhead": "wakeup.p99_us", "baseline": "native", "candidate": "guest", "max_percent": 10},
    ]
    return build_run(campaign, samples=20_000,
                     status={("guest", "stress", 2): "error"},
                     warnings={("guest", "idle"): [{"code": "no_rt_policy",
                                                    "message": "SCHED_FIFO was refused; run as root."}]})


def hostile_run():
    campaign = {
        "name": "evil & <co>",
        "repetitions": 3,
        "environments": {"native": {"target": "local"},
                         HOSTILE_ENV: {"target": "ssh", "host": "root@<board>"}},
        "loads": {"idle": {}, HOSTILE_LOAD: {"command": HOSTILE_COMMAND}},
        "benchmarks": {"wakeup": {"kind": "latency"}},
        "requirements": [{"metric": "wakeup.max_us", "environments": [HOSTILE_ENV], "max": 1000}],
    }
    dists = {(e, ld): lognormal_latency(2_000 if e == "native" else 3_000)
             for e in campaign["environments"] for ld in campaign["loads"]}
    return build_run(campaign, distributions=dists, repetitions=3, samples=3_000,
                     warnings={(HOSTILE_ENV, "idle"): [{"code": "no_rt_policy", "message": "<i>refused</i>"}]},
                     fingerprints={"native": {"type": "sysinfo", "hostname": "ok-host"},
                                   HOSTILE_ENV: {"type": "sysinfo", "hostname": HOSTILE_HOST}})


def store_run(engine, campaign_text: str, run: CampaignRun, tags: dict[str, str] | None = None) -> int:
    """Write a synthetic run into a store as the runner would (fingerprints, records, statuses); its id.
    `campaign_text` is the TOML the run's campaign came from (it is validated and stored)."""
    from rtvbench.campaign.reader import parse_campaign
    from rtvbench.store.writer import RunRecorder

    rec = RunRecorder.create(engine, parse_campaign(campaign_text), tags)
    for env, sysinfo in run.fingerprints.items():
        rec.add_fingerprint(env, {"target": "local"}, sysinfo, {"type": "meta", "probe_version": "test"})
    for i, m in enumerate(run.measurements):
        mr = rec.start_measurement(environment=m.environment, load=m.load, benchmark=m.benchmark, kind=m.kind,
                                   repetition=m.repetition, attempt=1, order_index=i, command=m.command,
                                   load_commands=m.load_commands)
        for seq, record in enumerate([m.meta, *m.windows, *m.results, {"type": "end", "status": "ok"}]):
            mr.add_record(seq, record)
        mr.finish(m.status, error=m.error)
    rec.set_status("finished")
    return rec.id
