"""`--strict` on check and compare, and the comparisons in the JUnit report, over stores built from
synthetic runs: the verdicts follow from the designs (one repetition per run, a board twice as slow),
not from a measurement."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from rtvbench.cli import main
from synthetic_runs import build_run, lognormal_latency, store_run

pytestmark = [pytest.mark.unit, pytest.mark.functional]

CAMPAIGN = """\
name = "nightly"
repetitions = {repetitions}
[environments.native]
target = "local"
[benchmarks.wakeup]
kind = "latency"
interval_us = 200
duration_s = 10
[[requirements]]
metric = "wakeup.p50_us"
max = 1000
"""


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    captured = capsys.readouterr()
    return exc.value.code, captured.out, " ".join(captured.err.split())


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Runs 1 and 2 of one repetition each; runs 3 and 4 of four, alike; run 5 of four, twice as slow."""
    from rtvbench.campaign.reader import parse_campaign
    from rtvbench.store import open_store

    url = f"sqlite:///{tmp_path_factory.mktemp('strict')}/s.db"
    engine = open_store(url)
    for seed, (repetitions, median_ns) in enumerate(((1, 2_000), (1, 2_000), (4, 2_000), (4, 2_000), (4, 4_000))):
        text = CAMPAIGN.format(repetitions=repetitions)
        store_run(engine, text, build_run(parse_campaign(text).data, {("native", "idle"): lognormal_latency(median_ns)},
                                          repetitions=repetitions, samples=2_000, seed=seed))
    return url


def test_strict_compare_of_one_repetition_each_exits_4_naming_the_design(store, capsys):
    code, _, err = _cli(capsys, "compare", "1", "2", "--max-percent", "10", "--store", store)
    assert code == 0 and not err                          # without the flag, as before
    code, _, err = _cli(capsys, "compare", "1", "2", "--max-percent", "10", "--strict", "--store", store)
    assert code == 4
    assert err.startswith("rtvbench: --strict: ") and "comparisons of run 2 against run 1 are INCONCLUSIVE: " in err
    assert "wakeup.p50_us [native / idle] (only 1 baseline and 1 candidate repetition has p50_us" in err
    assert err.endswith("more; measure at least 3 repetitions per side, on a quieter machine, or drop --strict.")


def test_strict_compare_passes_when_decided_and_a_regression_still_exits_1(store, capsys):
    code, out, err = _cli(capsys, "compare", "3", "4", "--metric", "wakeup.p50_us", "--max-percent", "20",
                          "--strict", "--store", store)
    assert (code, err) == (0, "") and "1 PASS, 0 FAIL, 0 INCONCLUSIVE" in out
    code, out, _ = _cli(capsys, "compare", "3", "5", "--max-percent", "20", "--strict", "--store", store)
    assert code == 1 and "FAIL" in out


def test_strict_needs_a_bound_and_no_cell_in_common_is_not_a_pass(store, capsys):
    code, _, err = _cli(capsys, "compare", "3", "4", "--strict", "--store", store)
    assert code == 2 and "give --max-percent PERCENT with it" in err
    code, _, err = _cli(capsys, "compare", "3", "4", "--metric", "wakeup.p42_us", "--max-percent", "20",
                        "--strict", "--store", store)
    assert code == 4 and "no cell of run 4 matches a cell of run 3, so nothing was compared" in err


def test_strict_check_fails_on_an_undecided_requirement_only(store, capsys):
    # One repetition of 2,000 samples: p50 is decided, but a requirement on p99.999 is not.
    assert _cli(capsys, "check", "--campaign", "3", "--strict", "--store", store)[0] == 0
    from rtvbench.campaign.reader import parse_campaign
    from rtvbench.store import open_store

    text = CAMPAIGN.format(repetitions=1).replace("wakeup.p50_us", "wakeup.p99999_us")
    run_id = store_run(open_store(store), text, build_run(parse_campaign(text).data,
                                                          {("native", "idle"): lognormal_latency(2_000)},
                                                          repetitions=1, samples=2_000, seed=9))
    assert _cli(capsys, "check", "--campaign", str(run_id), "--store", store)[0] == 0
    code, _, err = _cli(capsys, "check", "--campaign", str(run_id), "--strict", "--store", store)
    assert code == 4 and "1 of 1 requirements could not be decided: wakeup.p99999_us <= 1000" in err


def test_junit_of_a_report_against_a_baseline_has_both_suites_with_matching_counts(store, capsys, tmp_path):
    path = tmp_path / "r.xml"
    assert _cli(capsys, "report", "--campaign", "5", "--baseline", "3", "--format", "junit", "-o", str(path),
                "--store", store)[0] == 0
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites" and [s.tag for s in root] == ["testsuite", "testsuite"]
    for element in (*root, root):
        cases = element.iter("testcase")
        statuses = [("failure" if c.find("failure") is not None else
                     "skipped" if c.find("skipped") is not None else "pass") for c in cases]
        assert int(element.get("tests")) == len(statuses)
        assert int(element.get("failures")) == statuses.count("failure")
        assert int(element.get("skipped")) == statuses.count("skipped")
    requirements, comparisons = root
    assert [c.get("name") for c in requirements.iter("testcase")] == ["wakeup.p50_us <= 1000 (native; idle) [native / idle]"]
    p50 = next(c for c in comparisons.iter("testcase") if c.get("name") == "wakeup.p50_us [native / idle]")
    failure = p50.find("failure")             # twice as slow, without a bound: a regression
    assert failure.get("type") == "regression" and "4 vs 4 repetitions, significant" in failure.get("message")
    assert failure.get("message").startswith("run 3 median ")
