"""The CI pipelines of docs/ci.md, run as written: their commands taken from the page, run the way
GitHub Actions and GitLab CI run them (stop at the first failing command, then the steps that always
run), against a campaign whose command benchmark prints a fixed figure, so that every verdict follows
from the design alone: one repetition per run cannot decide a comparison (exit 4), three identical ones
do (exit 0), and a figure 50 % larger is a regression (exit 1); the always-run step publishes the
store's site. The conditions are opened wide, so
that a busy machine leaves the figures and verdicts as they are."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.functional,
              pytest.mark.skipif(shutil.which("jq") is None, reason="jq is not installed (make setup installs it)")]

CAMPAIGN = """\
name = "ci-gate"
repetitions = {repetitions}

[conditions]
max_foreign_percent = 100
max_steal_percent = 100

[environments.native]
target = "local"

[benchmarks.value]
kind = "command"
command = "sh -c 'echo value: {value}'"
format = "mapping"
expected_s = 1
[[benchmarks.value.figures]]
name = "value_us"
regex = 'value: ([0-9.]+)'
unit = "us"

[[requirements]]
metric = "value.value_us"
max = 1000
"""


def _examples() -> tuple[dict, dict]:
    text = (ROOT / "docs" / "ci.md").read_text()
    github = re.search(r"### GitHub Actions.*?```yaml\n(.*?)```", text, re.S).group(1)
    gitlab = re.search(r"### GitLab CI.*?```yaml\n(.*?)```", text, re.S).group(1)
    return yaml.safe_load(github), yaml.safe_load(gitlab)["latency-gate"]


def _pipeline() -> tuple[list[str], list[str]]:
    """The gate's commands and those that run whatever the gate said, from the GitLab job; the same
    as the GitHub job's."""
    github, gitlab = _examples()
    steps = [s for s in github["jobs"]["latency-gate"]["steps"] if "run" in s]
    gate = [s["run"].splitlines() for s in steps if s.get("if") != "always()"]
    always = [line for s in steps if s.get("if") == "always()" for line in s["run"].splitlines()]
    assert gate == [gitlab["script"]] and always == gitlab["after_script"], \
        "the GitHub and GitLab examples of docs/ci.md run different commands"
    return gitlab["script"], gitlab["after_script"]


@pytest.fixture
def job(probe, tmp_path):
    """Run the pipeline's commands once, as a CI job of commit `commit` on main would: its gate's exit
    code and stderr."""
    gate, always = _pipeline()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "rtvbench"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m rtvbench "$@"\n')
    wrapper.chmod(0o755)

    def run(commit: str, repetitions: int, value: int) -> tuple[int, str]:
        campaign = tmp_path / f"{commit}.toml"
        campaign.write_text(CAMPAIGN.format(repetitions=repetitions, value=value))
        env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHONPATH": str(ROOT),
               "RTVBENCH_STORE": f"sqlite:///{tmp_path}/store.db", "CAMPAIGN": str(campaign),
               "BRANCH": "main", "COMMIT": commit}
        for name in ("comparison.xml", "requirements.xml"):
            (tmp_path / "rtvbench-results" / name).unlink(missing_ok=True)
        script = subprocess.run(["bash", "-eo", "pipefail", "-c", "\n".join(gate)], cwd=tmp_path, env=env,
                                capture_output=True, text=True, timeout=120)
        after = subprocess.run(["bash", "-eo", "pipefail", "-c", "\n".join(always)], cwd=tmp_path, env=env,
                               capture_output=True, text=True, timeout=120)
        assert after.returncode == 0, after.stderr
        return script.returncode, script.stderr
    return run, tmp_path / "rtvbench-results"


def _suite(path: Path) -> ET.Element:
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites" and [s.tag for s in root] == ["testsuite"]
    return root[0]


def test_one_repetition_per_run_fails_the_strict_gate_with_exit_4(job):
    run, results = job
    assert run("a1", 1, 100)[0] == 0                  # no baseline yet: its requirement alone, which one repetition decides
    code, err = run("a2", 1, 100)
    assert code == 4, err
    assert ("1 of 1 comparisons of run 2 against run 1 are INCONCLUSIVE: value.value_us [native / idle] "
            "(only 1 baseline and 1 candidate repetition has value_us") in " ".join(err.split())
    case = _suite(results / "comparison.xml").find("testcase")
    assert case.find("skipped") is not None and case.find("failure") is None
    assert _suite(results / "requirements.xml").get("tests") == "1"
    # The always-run step published both runs' site, the second job adding its run to the first's.
    site = results / "site"
    assert {p.name for p in (site / "runs").iterdir()} == {"1.html", "2.html"}
    assert 'href="runs/2.html"' in (site / "index.html").read_text()


def test_runs_that_decide_pass_and_a_regression_exits_1(job):
    run, results = job
    assert run("b1", 3, 100)[0] == 0
    code, err = run("b2", 3, 100)
    assert code == 0, err
    suite = _suite(results / "comparison.xml")
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("1", "0", "0")
    assert _suite(results / "requirements.xml").find("testcase/failure") is None
    code, err = run("b3", 3, 150)
    assert code == 1, err
    failure = _suite(results / "comparison.xml").find("testcase/failure")
    assert failure.get("type") == "regression"
    assert failure.get("message") == ("run 2 median 100 us, run 3 median 150 us, difference +50.0 us, overhead "
                                      "+50.0 % (95 % CI +50.0 % .. +50.0 %), p 0 (t), 3 vs 3 repetitions, "
                                      "significant; FAIL: the interval lies entirely above the 10 % bound")
