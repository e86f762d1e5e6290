"""Figures against the number of VMs: environments equal but for `count` form one curve per
figure and load, through the median of the repetitions, and nothing else does."""

from __future__ import annotations

import copy

from synthetic_runs import DEFAULT_CAMPAIGN, build_run, lognormal_latency

from rtvbench.analysis.dataset import RunData
from rtvbench.campaign.reader import spec_of
from rtvbench.run_analyses.vm_scaling.analysis import scaling_series
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
    # the machine itself is the 0-VM point
    assert [(p.count, p.environment) for p in p50.points] == [(0, "native"), (1, "vm1"), (3, "vm3"), (5, "vm5")]
    # Medians of 3 repetitions of log-normal samples around 2 x (2, 3, 4, 6) us plus the 0.8 us floor.
    for p, expected in zip(p50.points, (4.8, 6.8, 8.8, 12.8)):
        assert abs(p.median - expected) / expected < 0.05, (p.environment, p.median)
        assert p.low <= p.median <= p.high and p.n == 3
    assert all([p.environment for p in s.points][:2] == ["native", "vm1"] for s in series.values())  # big: none


def test_no_series_without_two_counts_of_one_guest():
    run = scaling_run()
    run.campaign["environments"]["vm3"]["cpus"] = 4       # now vm1 and vm5 remain comparable ...
    run.campaign["environments"]["vm5"]["cpus"] = 8       # ... and not any more
    run.spec = spec_of(run.campaign)
    assert scaling_series(RunData(run), "wakeup") == []


def test_the_plot_has_one_line_per_load_over_integer_counts():
    from rtvbench.report.plots import vm_count_figure
    data = RunData(scaling_run())
    chosen = [s for s in scaling_series(data, "wakeup") if s.figure == "max_us"]
    lines = [(s.load, [(p.count, p.median, p.low, p.high) for p in s.points]) for s in chosen]
    svg = vm_count_svg([("max", "us", lines)], "wakeup max", "t")
    assert svg.startswith("<svg") and "number of VMs" in svg
    assert svg.count(">idle<") == 1 and svg.count(">hog<") == 1
    [ax] = [a for a in vm_count_figure([("max", "us", lines)], "t").axes if a.get_visible()]
    drawn = {c.get_label(): list(c.lines[0].get_xdata()) for c in ax.containers}
    assert drawn == {"idle": [0, 1, 3, 5], "hog": [0, 1, 3, 5]}


def test_the_report_plots_every_compared_figure_against_the_number_of_vms_with_native_at_zero():
    from rtvbench.analysis.evaluation import evaluate_run
    from rtvbench.kinds.latency.decode import LatencyKind
    from rtvbench.report.model import build
    from rtvbench.report.plots import vm_count_figure
    run = scaling_run()
    data = RunData(run)
    model = build(evaluate_run(run), with_plots=True)
    [section] = model.sections
    [plot] = [p for p in section.plots if "against the number of VMs" in p.title]
    compared = LatencyKind().compared_figures(data.figure_names("wakeup"))
    assert len(compared) >= 5
    series = scaling_series(data, "wakeup")
    kind = LatencyKind()
    panels = [(kind.label(f), "us", [(s.load, [(p.count, p.median, p.low, p.high) for p in s.points])
                                     for s in series if s.figure == f]) for f in compared]
    axes = [a for a in vm_count_figure(panels, "t").axes if a.get_visible()]
    assert [a.get_title() for a in axes] == [kind.label(f) for f in compared]
    for ax, f in zip(axes, compared):
        native = next(s for s in series if s.figure == f and s.load == "idle").points[0]
        idle = next(c.lines[0] for c in ax.containers if c.get_label() == "idle")
        assert idle.get_xdata()[0] == 0 and idle.get_ydata()[0] == native.median
    assert all(f">{kind.label(f)}<" in plot.svg for f in compared)


def test_a_neighbours_load_in_a_single_guest_is_said_to_be_no_load():
    from rtvbench.analysis.evaluation import evaluate_run
    from rtvbench.report.model import build
    model = build(evaluate_run(scaling_run()), with_plots=False)
    said = {(row.cells[0], row.cells[4]): row.cells[5] for row in model.run_tables[0].rows}
    assert said[("vm1", "hog")] == "no load: a single guest has no neighbour to run it"
    assert said[("vm3", "hog")] == "no record of what it achieved"     # the synthetic run stored none


def _with_host_usage(run):
    """Host samples as the runner stores them for qemu environments: over 1 s at 100 ticks/s, the first
    guest's vCPUs take 5 % of a host CPU, each neighbour 100 % under `hog` (its cpu load) and 2 % idle;
    QEMU's other threads 1 % each; every QEMU 100 MiB of PSS."""
    counts = {"vm1": 1, "vm3": 3, "vm5": 5, "big": 2}
    for m in run.measurements:
        n = counts.get(m.environment)
        if n is None:
            continue

        def sample(t: float, ticks) -> dict:
            return {"t": t, "clock_ticks": 100, "guests": [
                {"guest": g, "pid": 1000 + g, "vcpu": {"user": ticks(g), "system": 0},
                 "other": {"user": 0, "system": int(t)}, "rss_kib": 200 * 1024, "pss_kib": 100 * 1024}
                for g in range(1, n + 1)]}
        busy = (lambda g: 5 if g == 1 else (100 if m.load == "hog" else 2))
        m.cpu_stat = {"host_before": sample(0.0, lambda g: 0), "host_after": sample(1.0, busy)}
    return run


def test_what_the_guests_cost_the_host_is_plotted_against_the_number_of_vms():
    from rtvbench.run_analyses.vm_scaling.analysis import host_scaling
    from rtvbench.analysis.evaluation import evaluate_run
    from rtvbench.report.model import build

    run = _with_host_usage(scaling_run())
    series = {(load, what): points for load, what, points in host_scaling(RunData(run), "wakeup")}
    # One QEMU per VM: 5 % + 1 % for the first guest, 100 % + 1 % for each hogging neighbour.
    assert [(c, round(v, 6)) for c, v, _, _ in series[("hog", "cpu")]] == [(1, 6.0), (3, 208.0), (5, 410.0)]
    assert [(c, round(v, 6)) for c, v, _, _ in series[("idle", "cpu")]] == [(1, 6.0), (3, 12.0), (5, 18.0)]
    assert [(c, v) for c, v, _, _ in series[("idle", "pss")]] == [(1, 100.0), (3, 300.0), (5, 500.0)]
    (section,) = build(evaluate_run(run), with_plots=True).sections
    svg = " ".join(p.svg for p in section.plots if "number of VMs" in p.title)
    assert "host CPU of all the guests" in svg and "QEMU memory of all the guests (PSS)" in svg
