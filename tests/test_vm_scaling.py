"""Figures against the number of VMs: environments equal but for `count` form one curve per
figure and load, through the median of the repetitions, and nothing else does."""

from __future__ import annotations

import copy

from synthetic_runs import DEFAULT_CAMPAIGN, build_run, lognormal_latency

from rtvbench.analysis.dataset import RunData
from rtvbench.campaign import spec_of
from rtvbench.analysis.vm_scaling import scaling_series
from rtvbench.report.plots import vm_count_svg

GUEST = {"target": "qemu", "arch": "x86_64", "kernel": "kernels/x86_64/vmlinuz", "cpus": 1, "memory_mb": 256}


def scaling_run():
    campaign = copy.deepcopy(DEFAULT_CAMPAIGN)
    campaign["environments"] = {"native": {"target": "local"},
                                "vm1": dict(GUEST, count=1), "vm3": dict(GUEST, count=3),
                                "vm5": dict(GUEST, count=5),
                                "big": dict(GUEST, cpus=2, count=2)}     # another guest: its own shape
    campaign["loads"] = {"idle": {}, "hog": {"kind": "cpu", "percent": 100, "where": "neighbours"}}
    dists = {(env, load): lognormal_latency(median)
             for env, base in (("native", 2_000), ("vm1", 3_000), ("vm3", 4_000), ("vm5", 6_000), ("big", 3_000))
             for load, median in (("idle", base), ("hog", base * 2))}
    return build_run(campaign, distributions=dists, repetitions=3, samples=4_000)


def test_series_follow_the_count_and_leave_other_guests_out():
    data = RunData(scaling_run())
    series = {(s.figure, s.load): s for s in scaling_series(data, "wakeup")}
    p50 = series[("p50_us", "hog")]
    assert [(p.count, p.environment) for p in p50.points] == [(1, "vm1"), (3, "vm3"), (5, "vm5")]
    # Medians of 3 repetitions of log-normal samples around 2 x (3, 4, 6) us plus the 0.8 us floor.
    for p, expected in zip(p50.points, (6.8, 8.8, 12.8)):
        assert abs(p.median - expected) / expected < 0.05, (p.environment, p.median)
        assert p.low <= p.median <= p.high and p.n == 3
    assert all(s.points[0].environment == "vm1" for s in series.values())   # native, big: no curve


def test_no_series_without_two_counts_of_one_guest():
    run = scaling_run()
    run.campaign["environments"]["vm3"]["cpus"] = 4       # now vm1 and vm5 remain comparable ...
    run.campaign["environments"]["vm5"]["cpus"] = 8       # ... and not any more
    run.spec = spec_of(run.campaign)
    assert scaling_series(RunData(run), "wakeup") == []


def test_the_plot_has_one_line_per_load_over_integer_counts():
    data = RunData(scaling_run())
    chosen = [s for s in scaling_series(data, "wakeup") if s.figure == "max_us"]
    svg = vm_count_svg([(s.load, [(p.count, p.median, p.low, p.high) for p in s.points]) for s in chosen],
                       "wakeup max", "us", "t")
    assert svg.startswith("<svg") and "number of VMs" in svg
    assert svg.count(">idle<") == 1 and svg.count(">hog<") == 1


def test_the_report_plots_latency_against_the_number_of_vms():
    from rtvbench.analysis.evaluation import evaluate_run
    from rtvbench.report.model import build
    model = build(evaluate_run(scaling_run()), with_plots=True)
    [section] = model.sections
    scaling = [p for p in section.plots if "against the number of VMs" in p.title]
    assert [p.title.split(" against")[0] for p in scaling] == ["avg", "max"]
    assert all(p.svg.count(">idle<") == 1 and p.svg.count(">hog<") == 1 for p in scaling)


def test_a_neighbours_load_in_a_single_guest_is_said_to_be_no_load():
    from rtvbench.analysis.evaluation import evaluate_run
    from rtvbench.report.model import build
    model = build(evaluate_run(scaling_run()), with_plots=False)
    said = {(row.cells[0], row.cells[4]): row.cells[5] for row in model.run_tables[0].rows}
    assert said[("vm1", "hog")] == "no load: a single guest has no neighbour to run it"
    assert said[("vm3", "hog")] == "no record of what it achieved"     # the synthetic run stored none
