"""Analysis and report of loads on synthetic runs: the victim's work-budget figures, what each
load achieved, CPU usage from /proc/stat, the ranking of aggressors and the response-time matrix —
numbers checked against values computed here from the same synthetic samples."""

from __future__ import annotations

import copy
import csv
import io
import json
import math

import numpy as np
import pytest
from synthetic_runs import build_run, latency_result, lognormal_latency

from rtvbench.analysis.cpu_usage import measurement_usage
from rtvbench.analysis.dataset import RunData
from rtvbench.analysis.evaluation import evaluate_run
from rtvbench.analysis.load_achieved import describe, describe_all, load_achieved
from rtvbench.analysis.metrics import known_figure, measurement_figures
from rtvbench.report import render

INTERVAL_NS, WORK_NS = 1_000_000, 200_000


# ---------------------------------------------------------------------------
# Synthetic load records and /proc/stat samples, shaped like docs/probe/load.md and proc(5)


def cpu_load_records(name: str, per_cpu: dict[int, float], target: float = 50) -> list[dict]:
    workers = [{"worker": i, "role": "worker", "cpu": cpu, "tid": 100 + i, "achieved_percent": pct,
                "cpu_time_ns": int(pct * 1e7), "ops": 1000, "achieved_ops_per_s": 1000.0, "short_periods": 0}
               for i, (cpu, pct) in enumerate(per_cpu.items())]
    mean = sum(per_cpu.values()) / len(per_cpu)
    window = {"type": "window", "kind": "cpu", "index": 0, "t_start_ns": 0, "t_end_ns": 500_000_000,
              "achieved_percent": mean, "workers": workers}
    return [{"type": "meta", "schema": 1, "subcommand": "load",
             "params": {"kind": "cpu", "workers": len(per_cpu), "cpus": list(per_cpu), "percent": target}},
            window,
            {"type": "result", "kind": "cpu", "elapsed_ns": 1_400_000_000, "achieved_percent": mean,
             "achieved_ops_per_s": 2000.0, "short_periods": 0, "workers": workers},
            {"type": "end", "status": "interrupted", "elapsed_ns": 1_400_000_000}]


def mem_load_records(name: str, bps: float) -> list[dict]:
    return [{"type": "meta", "schema": 1, "subcommand": "load", "params": {"kind": "mem", "op": "copy", "workers": 1}},
            {"type": "result", "kind": "mem", "achieved_percent": 99.0, "achieved_bps": bps, "passes": 80,
             "workers": [{"worker": 0, "role": "worker", "cpu": 1, "achieved_percent": 99.0, "achieved_bps": bps}]},
            {"type": "end", "status": "interrupted"}]


def proc_stat(busy_ticks: dict[str, tuple[int, int, int]]) -> dict[str, dict]:
    """cpu line -> (user, steal, idle) deltas, as a (before, after) pair of snapshots."""
    before, after = {}, {}
    for line, (user, steal, idle) in busy_ticks.items():
        base = {"user": 1000, "nice": 5, "system": 200, "idle": 5000, "iowait": 3, "irq": 0, "softirq": 7,
                "steal": 11, "guest": 0, "guest_nice": 0}
        before[line] = dict(base)
        after[line] = dict(base, user=base["user"] + user, steal=base["steal"] + steal, idle=base["idle"] + idle)
    return {"before": before, "after": after}


def with_work_budget(run, slow_loads: dict[str, float]):
    """Give every latency measurement a response-time record: response = wake-up latency + the
    work (200 us, stretched by the load's factor), as the probe's --work-us reports it."""
    rng = np.random.default_rng(3)
    for m in run.measurements:
        if m.status == "error":
            continue
        r = m.result("all")
        n = r["count"]
        latency = np.asarray(lognormal_latency(2_000)(rng, n))
        response = latency + np.round(WORK_NS * slow_loads.get(m.load, 1.0)
                                      * rng.uniform(1.0, 1.05, n)).astype(np.int64)
        full = latency_result(response)
        r["response"] = {k: v for k, v in full.items() if k not in ("type", "cpu", "missed", "over")}
        r["deadline_misses"] = int((response > INTERVAL_NS).sum())
        r["work_ns"] = WORK_NS
        m.meta["params"]["work_ns"] = WORK_NS
        m.meta["params"]["interval_ns"] = INTERVAL_NS
    return run


def interference_run(slow_loads=None, repetitions=5):
    loads = {"idle": {}, "hog": {"kind": "cpu", "percent": 50, "cpus": [0]},
             "mild": {"kind": "cache", "cpus": [1]}, "same": {"kind": "timer", "cpus": [1]}}
    campaign = {"name": "interference", "repetitions": repetitions, "seed": 1,
                "environments": {"native": {"target": "local"}}, "loads": loads,
                "benchmarks": {"victim": {"kind": "latency", "interval_us": 1000, "work_us": 200,
                                          "duration_s": 1}}}
    dists = {("native", ld): lognormal_latency(2_000) for ld in loads}
    run = build_run(campaign, distributions=dists, repetitions=repetitions, samples=2000,
                    benchmark="victim", interval_ns=INTERVAL_NS)
    return with_work_budget(run, slow_loads or {"hog": 6.0, "mild": 1.3, "same": 1.0})


# ---------------------------------------------------------------------------


def test_work_budget_figures_are_response_times_and_deadline_misses():
    run = interference_run(repetitions=1)
    m = next(x for x in run.measurements if x.load == "hog")
    r = m.result("all")
    f = measurement_figures(m)
    response = r["response"]
    assert f["response_max_ns"] == response["max_ns"] and f["response_p999_us"] == response["p999_ns"] / 1e3
    assert f["response_avg_ms"] == pytest.approx(response["avg_ns"] / 1e6)
    assert f["deadline_misses"] == r["deadline_misses"] > 0          # 6 x 200 us + latency > 1 ms
    assert f["max_ns"] == r["max_ns"]                                 # the wake-up figures stay
    # A percentile the record lacks comes from the response histogram, as for wake-up latency.
    exact = response.pop("p9999_ns")
    assert measurement_figures(m)["response_p9999_ns"] == pytest.approx(exact, rel=0.01)
    assert f["response_count"] == response["count"]                 # the samples the response figures rest on
    for figure in ("response_p999_us", "response_max_ms", "deadline_misses", "response_count"):
        assert known_figure("latency", figure)
    for figure in ("response_missed", "response_p999", "deadline_miss"):
        assert not known_figure("latency", figure)
    # Without a work budget, none of them exist.
    plain = build_run(repetitions=1, samples=500).measurements[0]
    assert not {x for x in measurement_figures(plain) if x.startswith("response_") or x == "deadline_misses"}


def test_achieved_load_sentences():
    cpu = load_achieved("cpu50", cpu_load_records("cpu50", {0: 49.8, 1: 49.4}))
    assert describe(cpu) == "`cpu50` held 49.6 % on 2 CPUs (CPU 0: 49.8 %, CPU 1: 49.4 %), target 50 %"
    mem = load_achieved("mem", mem_load_records("mem", 5.1e9))
    assert describe(mem, quote=False) == "mem: 5.10 GB/s (copy)"
    assert describe_all([cpu, mem], quote=False).count(";") == 1
    # A load killed before it printed its result is described from its windows.
    records = [r for r in cpu_load_records("cpu50", {1: 30.0}) if r["type"] != "result"]
    assert describe(load_achieved("x", records)) == "`x` held 30.0 % on 1 CPU, target 50 %"
    leak = load_achieved("leak", [
        {"type": "meta", "params": {"kind": "leak", "limit_bytes": 64 << 20, "rate_bps": 32 << 20}},
        {"type": "result", "kind": "leak", "achieved_bps": 32.1 * (1 << 20), "leaked_bytes": 64 << 20,
         "rss_bytes": 66 << 20, "rss_peak_bytes": 66 << 20, "holding": True, "workers": []}])
    assert describe(leak, quote=False) == ("leak: grew at 32.1 MiB/s to 64.0 MiB (limit 64 MiB), RSS peak 66.0 MiB, "
                                           "holding at the limit")
    # A load that did nothing is said to have: the cell beside it was not measured under it.
    idle_mem = load_achieved("mem", mem_load_records("mem", 0.0))
    assert idle_mem.nothing and idle_mem.to_dict()["achieved_nothing"]
    assert describe(idle_mem, quote=False) == ("mem: 0 B/s (copy) — it achieved nothing: the measurement ran "
                                               "without this load")
    assert not mem.nothing and not cpu.nothing and not leak.nothing


def test_cpu_usage_from_proc_stat_deltas():
    run = build_run(repetitions=1, samples=500)
    m = run.measurements[0]
    # CPU 0: 10 user, 90 idle; CPU 1: 97 user, 2 steal, 1 idle; all: the sums.
    m.cpu_stat = proc_stat({"cpu": (107, 2, 91), "cpu0": (10, 0, 90), "cpu1": (97, 2, 1)})
    usage = {u.cpu: u for u in measurement_usage(m)}
    assert [u.cpu for u in measurement_usage(m)] == ["all", "0", "1"]
    assert usage["1"].busy == pytest.approx(99.0) and usage["1"].percent["steal"] == pytest.approx(2.0)
    assert usage["0"].busy == pytest.approx(10.0) and usage["all"].busy == pytest.approx(100 * 109 / 200)
    assert usage["1"].ticks == 100
    m.cpu_stat = {"before": m.cpu_stat["before"]}          # the runner died before the second sample
    assert measurement_usage(m) == []


@pytest.fixture(scope="module")
def ranked():
    run = interference_run()
    return run, evaluate_run(run)


def test_aggressors_are_ranked_worst_first_with_significance(ranked):
    run, ev = ranked
    [rk] = ev.extras["victim"].rankings
    assert (rk.benchmark, rk.environment, rk.baseline_load, rk.figure, rk.misses_figure) == (
        "victim", "native", "idle", "response_p999_us", "deadline_misses")
    order = [r.load for r in rk.rows]
    assert order[0] == "hog" and order[1] == "mild"
    hog = rk.rows[0]
    data = RunData(run)
    base = sorted(data.values("native", "idle", "victim", "response_p999_us"))
    cand = sorted(data.values("native", "hog", "victim", "response_p999_us"))
    assert hog.test.ratio == pytest.approx(cand[2] / base[2])        # medians of 5
    assert hog.test.verdict == "significant" and hog.test.ci_low > 1
    assert hog.misses == sum(data.values("native", "hog", "victim", "deadline_misses")) > 0
    assert next(r for r in rk.rows if r.is_baseline).misses == 0
    # "same" does the victim no harm: never significant, wherever it lands around the baseline; the
    # report claims no harm only when its interval is inside the margin.
    same = next(r for r in rk.rows if r.load == "same")
    assert same.test.verdict in ("equivalent", "cannot tell")
    claims_no_harm = any("no measurable harm from `same`" in f.text for f in ev.findings["victim"])
    assert claims_no_harm == (same.test.verdict == "equivalent")
    assert any(f.topic == "interference" and "`hog` interferes most" in f.text for f in ev.findings["victim"])


def test_ranking_and_matrix_in_every_format(ranked):
    run, ev = ranked
    html, md = render(run, "html"), render(run, "md")
    table = html[html.index('id="ranking-3-1"'):]
    table = table[:table.index("</table>")]
    rows = [line for line in table.split("<tr") if "<td>" in line]
    assert [r.split("<td>")[2].split("</td>")[0] for r in rows][:2] == ["hog", "mild"]
    assert "idle (baseline)" in table and "aggressors ranked by the victim" in html
    assert "Response-time matrix" in html and "Response-time matrix" in md
    doc = json.loads(render(run, "json"))
    [rk] = doc["interference"]
    assert [r["load"] for r in rk["ranking"]][:2] == ["hog", "mild"]
    assert rk["ranking"][0]["verdict"] == "significant"
    # The response-time matrix: pooled over repetitions exactly as if every sample had been kept.
    row = next(r for r in doc["response_matrix"] if r["load"] == "hog")
    ms = [m for m in run.measurements if m.load == "hog" and m.status == "ok"]
    resp = [m.result("all")["response"] for m in ms]
    n = sum(r["count"] for r in resp)
    mean = sum(r["count"] * r["avg_ns"] for r in resp) / n
    var = sum(r["count"] * (r["stddev_ns"] ** 2 + (r["avg_ns"] - mean) ** 2) for r in resp) / n
    assert row["measured"] == "response" and row["samples"] == n == 5 * 2000
    assert row["avg_ns"] == pytest.approx(mean) and row["stddev_ns"] == pytest.approx(math.sqrt(var))
    assert row["max_ns"] == max(r["max_ns"] for r in resp)
    assert row["misses"] == sum(m.result("all")["deadline_misses"] for m in ms)


def test_pooled_matrix_stddev_equals_that_of_all_samples():
    """Against numpy on the samples themselves, not against the formula."""
    rng = np.random.default_rng(5)
    parts = [lognormal_latency(3_000)(rng, 1000), lognormal_latency(9_000)(rng, 3000)]
    campaign = {"name": "m", "repetitions": 2, "environments": {"e": {"target": "local"}},
                "loads": {"idle": {}, "x": {"kind": "cpu"}}, "benchmarks": {"w": {"kind": "latency"}}}
    run = build_run(campaign, distributions={("e", "idle"): lognormal_latency(2_000),
                                             ("e", "x"): lognormal_latency(2_000)},
                    repetitions=2, samples=1000, benchmark="w")
    for m, values in zip([m for m in run.measurements if m.load == "x"], parts):
        m.results = [latency_result(values)]
    row = next(r for r in evaluate_run(run).extras["w"].matrix if r.load == "x")
    everything = np.concatenate(parts)
    assert row.cell.samples == 4000 and row.response is False
    assert row.cell.avg_us * 1000 == pytest.approx(everything.mean())
    assert row.cell.stddev_us * 1000 == pytest.approx(everything.std())
    assert row.cell.max_us * 1000 == everything.max()


def _cpu_and_mem_loaded_run():
    """Three repetitions under idle, a cpu load, a mem load and both, with what the loads achieved."""
    campaign = copy.deepcopy({"name": "loaded", "repetitions": 3, "seed": 1,
                              "environments": {"native": {"target": "local"}},
                              "loads": {"idle": {}, "cpu50": {"kind": "cpu", "percent": 50, "cpus": [0, 1]},
                                        "mem": {"kind": "mem", "cpus": [1]},
                                        "both": {"combine": ["cpu50", "mem"]}},
                              "benchmarks": {"wakeup": {"kind": "latency", "duration_s": 1}}})
    run = build_run(campaign, distributions={("native", ld): lognormal_latency(2_000) for ld in campaign["loads"]},
                    repetitions=3, samples=1000)
    for m in run.measurements:
        if m.load in ("cpu50", "both"):
            m.load_records["cpu50"] = cpu_load_records("cpu50", {0: 49.8 - m.repetition * 0.1, 1: 49.4})
        if m.load in ("mem", "both"):
            m.load_records["mem"] = mem_load_records("mem", 5.1e9)
        m.cpu_stat = proc_stat({"cpu": (150, 0, 50), "cpu0": (55, 0, 45), "cpu1": (95, 0, 5)})
    return run


def test_achieved_load_and_cpu_usage_next_to_the_results():
    run = _cpu_and_mem_loaded_run()
    html, md = render(run, "html"), render(run, "md")
    # Mean over the three repetitions: CPU 0 49.7 %, CPU 1 49.4 %, mean 49.55 -> "49.5" (3 digits).
    cpu_text = "held 49.5 % on 2 CPUs (CPU 0: 49.7 %, CPU 1: 49.4 %), target 50 %"
    for text in (html, md):
        assert cpu_text in text and "5.10 GB/s (copy)" in text
        assert "75 % busy over all CPUs (CPU 0: 55 %, CPU 1: 95 %)" in text
    # in the precondition of the section, the per-repetition table and its caption
    assert "Achieved during these measurements: in" not in md       # one environment: no "in `env`"
    assert "Load `both`: several loads at once" in md and "Achieved during these measurements: `cpu50` held" in md
    assert md.count("| max (us) | Load achieved | CPU busy |") == 3     # the three loaded cells' tables
    doc = json.loads(render(run, "json"))
    cell = next(c for c in doc["load_cells"] if c["load"] == "both")
    assert [a["load"] for a in cell["achieved"]] == ["cpu50", "mem"]
    assert cell["achieved"][0]["per_cpu_percent"] == {"CPU 0": pytest.approx(49.7), "CPU 1": pytest.approx(49.4)}
    assert cell["achieved_text"].startswith("cpu50 held 49.5 %")
    m = next(x for x in doc["measurements"] if x["load"] == "both")
    assert {u["cpu"]: round(u["busy_percent"]) for u in m["cpu_usage"]} == {"all": 75, "0": 55, "1": 95}
    rows = [r for r in csv.DictReader(io.StringIO(render(run, "csv"))) if r["load"] == "both"]
    by = {(r["repetition"], r["figure"]): r for r in rows}
    assert float(by[("1", "load.cpu50.cpu0.achieved_percent")]["value"]) == pytest.approx(49.8)
    assert by[("1", "load.mem.achieved_bps")]["unit"] == "bps"
    assert float(by[("3", "cpu_usage.cpu1.busy_percent")]["value"]) == pytest.approx(95.0)


def test_what_a_load_achieved_over_all_its_measurements_is_in_the_json():
    """The Loads table's mean over all of a load's measurements (those of a combination too) is a
    figure of the JSON report as well, with the same words."""
    run = _cpu_and_mem_loaded_run()
    md, doc = render(run, "md"), json.loads(render(run, "json"))
    overall = doc["loads_achieved"]
    assert set(overall) == {"cpu50", "mem", "both"}
    # cpu50 ran in its own cell and in `both`: CPU 0 held 49.8, 49.7, 49.6 % in each
    [cpu] = overall["cpu50"]["achieved"]
    assert cpu["per_cpu_percent"] == {"CPU 0": pytest.approx(49.7), "CPU 1": pytest.approx(49.4)}
    assert [a["load"] for a in overall["both"]["achieved"]] == ["cpu50", "mem"]
    for load, entry in overall.items():
        row = next(line for line in md.splitlines() if line.startswith(f"| {load} |"))
        assert row.replace("`", "").rstrip(" |").endswith(entry["achieved_text"])
