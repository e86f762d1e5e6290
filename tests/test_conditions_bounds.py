"""The share of the measured CPUs' time that other processes took is a share: a process is counted by
the CPU it last ran on, and may have run elsewhere too, but what it took of the measured CPUs can be no
more than they spent running processes."""

from __future__ import annotations

from synthetic_runs import build_run, lognormal_latency
from test_load_report import proc_stat

from rtvbench.analysis.dataset import RunData
from rtvbench.analysis.conditions import measurement_conditions


def test_foreign_time_under_a_load_is_at_most_what_the_measured_cpus_ran():
    campaign = {"name": "loaded", "repetitions": 1, "seed": 1, "environments": {"native": {"target": "local"}},
                "loads": {"idle": {}, "cpu50": {"kind": "cpu", "percent": 50, "cpus": [0, 1]}},
                "benchmarks": {"wakeup": {"kind": "latency", "duration_s": 1}}}
    run = build_run(campaign, distributions={("native", ld): lognormal_latency(2_000) for ld in campaign["loads"]},
                    repetitions=1, samples=1000)
    (m,) = [m for m in run.measurements if m.load == "cpu50"]
    # 100 ticks per CPU, 55 and 95 of them running processes: 150 of 200
    m.cpu_stat = proc_stat({"cpu": (150, 0, 50), "cpu0": (55, 0, 45), "cpu1": (95, 0, 5)})
    # a process that last ran on CPU 0 took 500 ticks in all, most of them on CPUs not measured
    m.cpu_stat["processes_before"] = {"123": ["hog", 0, 0, 0]}
    m.cpu_stat["processes_after"] = {"123": ["hog", 500, 0, 0]}
    c = measurement_conditions(RunData(run), m)
    assert c is not None and c.judged and not c.ok
    assert c.foreign_percent == 75.0
    assert c.reason.startswith("75 % of the time of CPUs 0-1"), c.reason
