"""Declared [[comparisons]] beside the defaults, and overhead signed so that positive is worse."""

from __future__ import annotations

import copy
import json
from types import SimpleNamespace

import pytest
from synthetic_runs import DEFAULT_CAMPAIGN, build_run, lognormal_latency

from rtvbench.analysis.compare import compare_cells, ratio_test
from rtvbench.analysis.dataset import RunData
from rtvbench.analysis.evaluation import evaluate_run
from rtvbench.analysis.kind import get_kind
from rtvbench.report import render


def test_a_bandwidth_that_halves_is_a_positive_overhead_and_a_latency_that_halves_a_negative_one():
    before, after = [10.0, 10.2, 9.8, 10.1, 9.9], [5.0, 5.1, 4.9, 5.05, 4.95]
    bw = ratio_test(before, after, lower_is_better=False)
    assert bw.ratio == pytest.approx(0.5)
    assert bw.overhead_percent == pytest.approx(50.0) and bw.worse is True
    lo, hi = bw.ci_percent
    assert lo <= 50.0 <= hi and lo == pytest.approx((1 - bw.ci_high) * 100)

    lat = ratio_test(before, after)
    assert lat.overhead_percent == pytest.approx(-50.0) and lat.worse is False
    assert lat.ci_percent == pytest.approx(((lat.ci_low - 1) * 100, (lat.ci_high - 1) * 100))
    # The verdict does not depend on the direction, only the sign does.
    assert bw.verdict == lat.verdict == "significant"


def test_compare_cells_takes_the_direction_from_the_kind():
    bw_figure, time_figure = "bw.read.16MiB_GBps", "lat.64MiB_random"
    assert get_kind("mem-bw").lower_is_better(bw_figure) is False
    assert get_kind("mem-lat").lower_is_better(time_figure) is True
    values = {("native", "idle"): [10.0, 10.1, 9.9], ("guest", "idle"): [8.0, 8.1, 7.9]}
    for kind, figure, expected in (("mem-bw", bw_figure, 20.0), ("mem-lat", time_figure, -20.0)):
        data = SimpleNamespace(spec=SimpleNamespace(equivalence_percent=10.0),
                               kind=lambda bench, k=kind: get_kind(k),
                               values=lambda env, load, bench, fig: values[(env, load)])
        t = compare_cells(data, "b", figure, ("native", "idle"), ("guest", "idle"))
        assert t.overhead_percent == pytest.approx(expected)


def _three_environment_run(comparisons):
    campaign = copy.deepcopy(DEFAULT_CAMPAIGN)
    campaign["environments"]["guest_rt"] = dict(campaign["environments"]["guest"])
    campaign["loads"]["mem"] = {"command": "stress-ng --vm 1", "where": "same"}
    campaign["comparisons"] = comparisons
    dists = {}
    for env, median in (("native", 2_000), ("guest", 6_000), ("guest_rt", 3_000)):
        for load, factor in (("idle", 1.0), ("stress", 2.0), ("mem", 3.0)):
            dists[(env, load)] = lognormal_latency(median * factor, sigma=0.2)
    return build_run(campaign, distributions=dists, repetitions=4, samples=4_000)


def test_declared_comparisons_are_added_beside_the_defaults():
    run = _three_environment_run([
        {"baseline": "guest", "candidate": "guest_rt", "loads": ["idle"]},
        {"baseline": "stress", "candidate": "mem", "environments": ["native"]},
        {"baseline": "native", "candidate": "guest"},            # a default already: not doubled
    ])
    ev = evaluate_run(run)
    data = RunData(run)
    declared = [c for c in ev.comparisons if c.declared]
    assert {(c.axis, c.context, c.baseline, c.candidate) for c in declared} == {
        ("environment", "idle", "guest", "guest_rt"), ("load", "native", "stress", "mem")}
    defaults = {(c.axis, c.context, c.baseline, c.candidate, c.figure) for c in ev.comparisons if not c.declared}
    assert ("environment", "idle", "native", "guest_rt", "p99_us") in defaults
    assert len(defaults) == len({(c.axis, c.context, c.baseline, c.candidate, c.figure) for c in ev.comparisons
                                 if not c.declared})

    c = next(c for c in declared if c.candidate == "guest_rt" and c.figure == "p99_us")
    expected = ratio_test(data.values("guest", "idle", "wakeup", "p99_us"),
                          data.values("guest_rt", "idle", "wakeup", "p99_us"))
    assert c.test.ratio == pytest.approx(expected.ratio)
    assert c.test.ratio == pytest.approx(0.5, rel=0.15)          # 3 us against 6 us: half the latency
    assert c.test.overhead_percent < 0 and c.test.verdict == "significant"

    md = render(run, "md")
    assert "wakeup: `guest_rt` against `guest`, both under `idle`" in md
    assert "wakeup: load `mem` against `stress`, both in `native`" in md
    assert "wakeup: `guest_rt` against the baseline `native`, both under `idle`" in md
    doc = json.loads(render(run, "json"))
    rows = [r for r in doc["comparisons"] if r["declared"]]
    assert {(r["baseline"]["environment"], r["candidate"]["environment"]) for r in rows} == {
        ("guest", "guest_rt"), ("native", "native")}
    assert all(r["lower_is_better"] for r in doc["comparisons"])


BASE = """
name = "c"
[environments.native]
target = "local"
[environments.other]
target = "local"
[loads.idle]
[loads.busy]
command = "true"
[benchmarks.wakeup]
kind = "latency"
duration_s = 1
"""


@pytest.mark.parametrize("table, expected", [
    ('baseline = "native"\ncandidate = "nowhere"',
     '"nowhere" is neither an environment nor a load (environments: native, other; loads: idle, busy)'),
    ('baseline = "native"\ncandidate = "busy"',
     '"busy" is a load while the baseline "native" is an environment; compare two environments or two loads'),
    ('baseline = "idle"\ncandidate = "idle"', "must be another load than baseline"),
    ('baseline = "native"\ncandidate = "other"\nenvironments = ["native"]',
     "applies to a comparison of two loads; two environments are compared under `loads`"),
    ('baseline = "idle"\ncandidate = "busy"\nenvironments = ["elsewhere"]', 'environment "elsewhere" is not defined'),
    ('baseline = "idle"\ncandidate = "busy"\nbenchmarks = ["nope"]', 'benchmark "nope" is not defined'),
])
def test_a_wrong_comparison_is_named_with_its_line(tmp_path, table, expected):
    from rtvbench.campaign.reader import CampaignError, load_campaign
    path = tmp_path / "c.toml"
    path.write_text(BASE + "[[comparisons]]\n" + table + "\n")
    with pytest.raises(CampaignError) as err:
        load_campaign(path)
    text = str(err.value)
    assert expected in text and "c.toml:" in text, text


def test_a_valid_comparison_is_stored_in_the_spec(tmp_path):
    from rtvbench.campaign.reader import load_campaign
    path = tmp_path / "c.toml"
    path.write_text(BASE + '[[comparisons]]\nbaseline = "idle"\ncandidate = "busy"\nenvironments = ["other"]\n')
    spec = load_campaign(path).spec()
    assert spec.comparisons == [{"baseline": "idle", "candidate": "busy", "environments": ["other"]}]
    assert type(spec).from_json(spec.to_json()).comparisons == spec.comparisons


def test_the_difference_of_medians_the_report_prints_is_in_the_json():
    """The comparison tables' "Δ median" is a figure of the evaluation, exported with the others."""
    doc = json.loads(render(_three_environment_run([]), "json"))
    assert doc["comparisons"]
    for c in doc["comparisons"]:
        if c["baseline_median"] is None or c["candidate_median"] is None:
            assert c["difference"] is None
        else:
            assert c["difference"] == pytest.approx(c["candidate_median"] - c["baseline_median"])


def test_every_compared_and_summarised_figure_has_its_unit_in_the_json():
    """A figure whose name carries no unit (an os primitive's time, in ns) is printed in a unit:
    the JSON says which, so that its numbers read the same there."""
    run = _three_environment_run([])
    doc = json.loads(render(run, "json"))
    kind = get_kind("latency")
    assert doc["comparisons"] and doc["summaries"]
    for entry in doc["comparisons"] + doc["summaries"]:
        assert entry["unit"] == kind.unit(entry["figure"]), entry["figure"]
    assert {e["unit"] for e in doc["summaries"]} >= {"us", "count"}
