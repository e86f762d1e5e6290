"""One run against another (`rtvbench compare`, `report --baseline`): cells matched by name or by a
mapping, compared by the same machinery a run uses between its environments.

Ground truth: a run holding two environments is split in two runs, one environment each. Comparing the
second run against the first (with the environment renamed by the mapping) must give, figure by figure,
exactly the numbers and verdicts the whole run gives for one environment against the other."""

from __future__ import annotations

import copy
import json
from dataclasses import replace

import pytest

from rtvbench.analysis.across_runs import compare_runs
from rtvbench.analysis.compare import comparisons
from rtvbench.analysis.dataset import RunData
from rtvbench.cli import main
from rtvbench.errors import InputError
from synthetic_runs import build_run, lognormal_latency, store_run

pytestmark = pytest.mark.unit


def _split(run, env: str, run_id: int):
    """The part of `run` measured in `env`, as a run of its own."""
    part = replace(run, id=run_id, measurements=[m for m in run.measurements if m.environment == env],
                   fingerprints={env: run.fingerprints[env]})
    return RunData(part)


@pytest.fixture(scope="module")
def whole():
    return build_run(repetitions=5, samples=4_000)


def test_a_run_against_another_is_the_same_comparison_as_inside_one_run(whole):
    inside = {(c.context, c.figure): c.test for c in comparisons(RunData(whole))
              if c.axis == "environment" and c.baseline == "native" and c.candidate == "guest"}
    x = compare_runs(_split(whole, "native", 1), _split(whole, "guest", 2), {"native": "guest"})
    across = {(c.cell.load[0], c.figure): c.test for c in x.comparisons}
    assert set(across) == set(inside) and len(across) > 10
    for key, t in across.items():
        u = inside[key]
        assert (t.baseline_median, t.candidate_median, t.ratio, t.ci_low, t.ci_high, t.p_value, t.verdict) == \
               (u.baseline_median, u.candidate_median, u.ratio, u.ci_low, u.ci_high, u.p_value, u.verdict), key
    # The guest's median wake-up is 3 us against 2 us (+ an 0.8 us floor each): about +36 %.
    p50 = across[("idle", "p50_us")]
    assert p50.verdict == "significant" and 30 < p50.overhead_percent < 42
    assert not x.only_baseline and not x.only_candidate
    # Fingerprints: run 1's native against run 2's guest, the kernel release differing.
    (d,) = x.fingerprints
    assert d.environments == ["run 1: native", "run 2: guest"]
    assert any(r.values == ["6.1.0-rt", "6.1.0"] and r.differs for r in d.rows), d.rows
    assert not any(r.differs for r in d.rows if r.values[0] == "Cortex-A57")


def test_names_that_differ_match_nothing_without_a_mapping_and_a_wrong_mapping_is_named(whole):
    a, b = _split(whole, "native", 1), _split(whole, "guest", 2)
    x = compare_runs(a, b)
    assert x.comparisons == []
    assert sorted(x.only_baseline) == [("native", "idle", "wakeup"), ("native", "stress", "wakeup")]
    assert sorted(x.only_candidate) == [("guest", "idle", "wakeup"), ("guest", "stress", "wakeup")]
    with pytest.raises(InputError, match="run 1 has no environment, load or benchmark named 'natve'"):
        compare_runs(a, b, {"natve": "guest"})
    with pytest.raises(InputError, match="run 2 has no environment, load or benchmark named 'gust'"):
        compare_runs(a, b, {"native": "gust"})


def test_changed_parameters_and_kinds_are_said(whole):
    campaign = copy.deepcopy(whole.campaign)
    campaign["benchmarks"]["wakeup"]["interval_us"] = 100
    other = build_run(campaign, repetitions=3, samples=2_000)
    x = compare_runs(RunData(whole), RunData(other))
    assert any("interval_us 200 -> 100" in n for n in x.notes), x.notes
    assert x.comparisons        # compared anyway
    campaign["benchmarks"]["wakeup"] = {"kind": "work"}
    x = compare_runs(RunData(whole), RunData(replace(other, spec=build_run(campaign, repetitions=1).spec)))
    assert x.comparisons == [] and any("kind `latency` in run 42 and `work`" in n for n in x.notes), x.notes


def test_a_bound_judges_each_overhead_by_its_interval(whole):
    a, b = _split(whole, "native", 1), _split(whole, "guest", 2)
    strict = compare_runs(a, b, {"native": "guest"}, max_percent=10, metrics=["wakeup.p50_us"])
    assert {c.figure for c in strict.comparisons} == {"p50_us"}
    assert [c.status for c in strict.comparisons] == ["FAIL", "FAIL"] and strict.status == "FAIL"
    assert "entirely above the 10 % bound" in strict.comparisons[0].reason
    loose = compare_runs(a, b, {"native": "guest"}, max_percent=500, metrics=["wakeup.p50_us"])
    assert loose.status == "PASS"
    # Against itself the interval straddles a 0 % bound.
    same = compare_runs(a, _split(whole, "native", 3), max_percent=0, metrics=["wakeup.p50_us"])
    assert same.status == "INCONCLUSIVE" and all(c.test.ratio == 1 for c in same.comparisons)


CAMPAIGN = """
name = "nightly"
repetitions = 4
[environments.native]
target = "local"
[environments.board_b]
target = "local"
[loads.idle]
[benchmarks.wakeup]
kind = "latency"
interval_us = 200
duration_s = 10
"""


def _cli(capsys, *args: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    return exc.value.code, capsys.readouterr().out


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    from rtvbench.campaign.reader import parse_campaign
    from rtvbench.store import open_store

    url = f"sqlite:///{tmp_path_factory.mktemp('across')}/s.db"
    engine = open_store(url)
    campaign = parse_campaign(CAMPAIGN).data
    slow = {("native", "idle"): lognormal_latency(2_000), ("board_b", "idle"): lognormal_latency(2_000)}
    for i, scale in enumerate((1.0, 1.0, 2.0)):      # the third run's board is twice as slow
        dists = {k: lognormal_latency(2_000 * (scale if k[0] == "board_b" else 1.0)) for k in slow}
        store_run(engine, CAMPAIGN, build_run(campaign, dists, repetitions=4, samples=2_000, seed=i),
                  {"bsp": f"5.{i}"})
    return url


def test_compare_prints_the_cells_and_exits_1_on_a_failed_bound(store, capsys):
    code, text = _cli(capsys, "compare", "1", "2", "--store", store)
    assert code == 0 and "Run 2 (nightly) against run 1 (nightly)" in text and "p99_us" in text
    code, text = _cli(capsys, "compare", "1", "3", "--metric", "wakeup.p50_us", "--max-percent", "20",
                      "--store", store, "--json")
    doc = json.loads(text)
    assert code == 1 and doc["status"] == "FAIL"
    by_env = {c["environment"][0]: c for c in doc["comparisons"]}
    assert by_env["board_b"]["status"] == "FAIL" and by_env["native"]["status"] in ("PASS", "INCONCLUSIVE")
    # Twice the body of the distribution, plus the same 0.8 us floor: +70 % .. +90 %.
    assert 70 < by_env["board_b"]["overhead_percent"] < 90
    code, text = _cli(capsys, "compare", "1", "3", "--map", "board_b=native", "--metric", "wakeup.p50_us",
                      "--store", store, "--json")
    doc = json.loads(text)
    assert code == 0 and [c["environment"] for c in doc["comparisons"]] == [["native", "native"],
                                                                            ["board_b", "native"]]


def test_compare_refuses_a_malformed_mapping_in_one_sentence(store, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["compare", "1", "2", "--map", "native", "--store", store])
    assert exc.value.code == 2
    assert "--map 'native' is not NAME_IN_A=NAME_IN_B" in capsys.readouterr().err


def test_report_with_a_baseline_run_has_the_comparison_in_every_format(store, capsys, tmp_path):
    code, text = _cli(capsys, "report", "--campaign", "3", "--baseline", "1", "--format", "json", "-o", "-",
                      "--store", store)
    doc = json.loads(text)["against_run"]
    assert code == 0 and doc["baseline_run"] == 1 and doc["candidate_run"] == 3
    (p50,) = [c for c in doc["comparisons"] if c["environment"] == ["board_b", "board_b"]
              and c["figure"] == "p50_us"]
    assert p50["verdict"] == "significant" and 70 < p50["overhead_percent"] < 90
    html = tmp_path / "r.html"
    code, _ = _cli(capsys, "report", "--campaign", "3", "--baseline", "1", "-o", str(html), "--store", store)
    page = html.read_text()
    assert code == 0 and 'id="against-run"' in page and "Run 3 (nightly) against run 1 (nightly)" in page
    assert "run 1: board_b" in page           # the fingerprints of both runs
    code, text = _cli(capsys, "report", "--campaign", "3", "--format", "md", "-o", "-", "--store", store)
    assert "against run" not in text           # without --baseline, no such section
    with pytest.raises(SystemExit) as exc:
        main(["report", "--map", "a=b", "--store", store])
    assert exc.value.code == 2 and "give --baseline RUN" in capsys.readouterr().err


def test_history_follows_a_figure_across_runs_and_marks_the_step(store, capsys, tmp_path):
    code, text = _cli(capsys, "history", "wakeup.p50_us", "--environment", "board_b", "--json", "--store", store)
    (series,) = json.loads(text)["series"]
    assert code == 0 and [p["run"] for p in series["points"]] == [1, 2, 3]
    assert [p["tags"]["bsp"] for p in series["points"]] == ["5.0", "5.1", "5.2"]
    first, same, slower = (p["against_previous"] for p in series["points"])
    assert first is None and same["verdict"] == "equivalent"
    assert slower["verdict"] == "significant" and 70 < slower["overhead_percent"] < 90
    assert all(len(p["values"]) == 4 for p in series["points"])
    code, text = _cli(capsys, "history", "wakeup.p50_us", "--tag", "bsp=5.2", "--json", "--store", store)
    assert [[p["run"] for p in s["points"]] for s in json.loads(text)["series"]] == [[3], [3]]
    svg = tmp_path / "h.svg"
    code, text = _cli(capsys, "history", "wakeup.cpu1.p50_us", "-o", str(svg), "--store", store)
    figure = svg.read_text()
    assert code == 0 and "wakeup.cpu1.p50_us in board_b under idle" in text
    assert all(label in figure for label in ("#1", "#3", "bsp=5.2", "board_b / idle", "native / idle"))
    with pytest.raises(SystemExit) as exc:
        main(["history", "wakeup.p42_us", "--store", store])
    assert exc.value.code == 2 and "no run in the store has wakeup.p42_us" in capsys.readouterr().err
