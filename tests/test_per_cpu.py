"""Per-CPU results: the probe measures each CPU in its own thread and prints a result per CPU beside the
merged one. Here CPU 1 is the bad one (a spike CPU 0 never sees): the per-CPU table, a requirement on
CPU 1 and the exports must name CPU 1, and the merged figures must be exactly those of the merged record."""

from __future__ import annotations

import copy
import csv
import io
import json

import numpy as np
import pytest

from rtvbench.analysis.dataset import RunData
from rtvbench.analysis.evaluation import evaluate_run
from rtvbench.analysis.metrics import known_figure
from rtvbench.report import render
from rtvbench.report.model import build
from synthetic_runs import DEFAULT_CAMPAIGN, build_run, latency_result, lognormal_latency

SPIKE_NS = 900_000           # 900 us on CPU 1 only
REQUIREMENTS = [
    {"metric": "wakeup.cpu1.max_us", "loads": ["idle"], "max": 500},         # CPU 1 breaks it
    {"metric": "wakeup.cpu0.max_us", "loads": ["idle"], "max": 500},         # CPU 0 holds it
    {"metric": "wakeup.cpu0.p999999_us", "loads": ["idle"], "max": 500},     # too few samples per CPU
]


def _run():
    campaign = copy.deepcopy(DEFAULT_CAMPAIGN)
    campaign["requirements"] = copy.deepcopy(REQUIREMENTS)
    run = build_run(campaign, distributions={("native", "idle"): lognormal_latency(2_000),
                                             ("guest", "idle"): lognormal_latency(3_000)},
                    repetitions=4, samples=20_000)
    rng = np.random.default_rng(3)
    for m in run.measurements:
        cpu0 = lognormal_latency(2_000)(rng, 10_000)
        cpu1 = lognormal_latency(2_000)(rng, 10_000)
        cpu1[rng.integers(0, len(cpu1), 5)] = SPIKE_NS           # the bad CPU
        m.results = [latency_result(cpu0, cpu=0), latency_result(cpu1, cpu=1),
                     latency_result(np.concatenate([cpu0, cpu1]))]
    return run


@pytest.fixture(scope="module")
def run():
    return _run()


def test_per_cpu_figures_sit_beside_the_unchanged_merged_ones(run):
    data = RunData(run)
    for m in run.measurements:
        f = data.figures(m)
        merged = m.result("all")
        assert f["max_us"] == merged["max_ns"] / 1000 and f["count"] == merged["count"]
        assert f["p99_ns"] == merged["p99_ns"] and f["avg_ns"] == merged["avg_ns"]
        assert f["cpu1.max_us"] == SPIKE_NS / 1000 and f["cpu0.max_us"] < 100
        assert f["cpu0.count"] + f["cpu1.count"] == f["count"]
        r = data.result(m)
        assert r.cpus == [0, 1] and r.cpu_samples == {0: 10_000, 1: 10_000} and r.samples == 20_000
        assert r.cpu_distributions[1].max_ns == SPIKE_NS
    assert known_figure("latency", "cpu1.max_us") and known_figure("latency", "cpu12.p99_us")
    assert not known_figure("latency", "cpu1.maxx_us") and not known_figure("os", "cpu1.null")


def test_the_per_cpu_table_names_cpu1_as_the_bad_one(run):
    model = build(evaluate_run(run), with_plots=True)
    [section] = model.sections
    [table] = [t for t in section.repetition_tables if "per CPU" in t.caption]
    worst = table.header.index("Worst max (us)")
    rows = {(r.cells[0], r.cells[2]): r.cells for r in table.rows}
    assert set(rows) == {("native", "0"), ("native", "1"), ("guest", "0"), ("guest", "1")}
    for env in ("native", "guest"):
        assert rows[(env, "1")][worst] == "900" and float(rows[(env, "0")][worst]) < 100
        assert rows[(env, "1")][table.header.index("Policy / priority")] == "fifo 80"
    plots = [p for p in section.plots if "per CPU" in p.title]
    assert len(plots) == 2 and all(">CPU 1 (max 900 us)<" in p.svg for p in plots)


def test_a_requirement_on_cpu1_fails_and_names_cpu1(run):
    ev = evaluate_run(run)
    bad, good, few = ev.verdicts
    assert bad.status == "FAIL" and "cpu1.max_us = 900 us" in bad.reason
    assert good.status == "PASS" and "cpu0.max_us ranges" in good.reason
    # a percentile is judged on the samples of its CPU (10 000 < 1 000 000 for p99.9999)
    assert few.status == "INCONCLUSIVE" and "10,000" in few.reason


def test_csv_and_json_carry_the_per_cpu_rows(run):
    rows = list(csv.DictReader(io.StringIO(render(run, "csv"))))
    cpu1 = [r for r in rows if r["figure"] == "cpu1.max_us"]
    assert len(cpu1) == len(run.measurements) and {float(r["value"]) for r in cpu1} == {900.0}
    assert {r["unit"] for r in cpu1} == {"us"}
    doc = json.loads(render(run, "json"))
    for m in doc["measurements"]:
        assert m["figures"]["cpu1.max_us"] == 900.0 and m["figures"]["max_us"] == 900.0
    summary = {(s["environment"], s["figure"]): s for s in doc["summaries"]}
    assert summary[("guest", "cpu1.max_us")]["median"] == 900.0


def test_a_last_window_cut_short_is_left_out_of_the_window_series():
    """Windows of 0.4 s over a 1.0 s run: two full ones and a last one of 0.2 s whose few wake-ups
    have a small maximum; the series holds the two full windows only, with their own maxima."""
    from rtvbench.kinds.latency.decode import LatencyKind
    windows = [{"type": "window", "cpu": 0, "index": i, "t_start_ns": int(a * 1e9), "t_end_ns": int(b * 1e9),
                "count": n, "missed": 0, "min_ns": 1000, "max_ns": mx}
               for i, (a, b, n, mx) in enumerate([(0, 0.4, 2000, 90_000), (0.4, 0.8, 2000, 70_000),
                                                  (0.8, 1.0, 1000, 9_000)])]
    windows += [dict(w, cpu=1, max_ns=w["max_ns"] // 2) for w in windows]
    m = build_run(repetitions=1, samples=100).measurements[0]
    m.windows = windows
    series = LatencyKind().decode(m).series["max_us"]
    assert series == [(0.4, 90.0), (0.8, 70.0)]
