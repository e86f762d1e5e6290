"""A target that goes away mid-measurement (a guest crash, a dropped ssh connection) costs only
that measurement's unfinished part: the attempt is stored as failed with the target's own log,
the runner reaches the target again and retries the measurement, and the campaign goes on. If the
target cannot be reached again, the run ends resumable and `--resume` finishes it."""

from __future__ import annotations

import pytest
from rich.console import Console

from rtvbench.campaign.reader import parse_campaign
from rtvbench.errors import TargetError, TargetLost
from rtvbench.runner.run import Runner
from rtvbench.store import load_run, open_store
from rtvbench.targets.base import TARGETS
from rtvbench.targets.local import LocalTarget

pytestmark = pytest.mark.functional

CONSOLE = "[    0.000000] Linux version 6.1.0\nKernel panic - not syncing: test\n"


class FlakyTarget(LocalTarget):
    """The local machine, except that chosen probe runs die halfway, like a crashing guest.

    `script` says what each `latency` run does, in order: "ok", "lose" (stream the first lines,
    then go away) ; `reachable` says whether deploy_probe can reach it again."""

    kind = "test-flaky"
    script: list[str] = []
    reachable = True
    deploys = 0

    def deploy_probe(self) -> str:
        type(self).deploys += 1
        if not type(self).reachable:
            raise TargetError("environment flaky is unreachable (test).")
        return super().deploy_probe()

    def run(self, argv, on_line, deadline=None):
        if "latency" not in argv or not type(self).script:
            return super().run(argv, on_line)
        if type(self).script.pop(0) == "ok":
            return super().run(argv, on_line)
        lines: list[str] = []
        super().run(argv, lines.append)
        for line in lines[:2]:              # meta and the first window made it across
            on_line(line)
        raise TargetLost("the guest of environment flaky died (test)", log=CONSOLE)


@pytest.fixture(autouse=True)
def registered():
    """The stand-in target kind exists only during this module's tests (other tests list the
    supported kinds)."""
    TARGETS.register("test-flaky")(FlakyTarget)
    yield
    TARGETS.unregister("test-flaky")


CAMPAIGN = """
name = "flaky"
repetitions = 2
seed = 3

[environments.flaky]
target = "test-flaky"

[benchmarks.wakeup]
kind = "latency"
interval_us = 1000
duration_s = 0.3
policy = "other"
cpus = [0]
window_s = 0.1
"""


@pytest.fixture
def flaky(tmp_path, monkeypatch, probe):
    monkeypatch.setenv("RTVBENCH_PROBE", str(probe))
    FlakyTarget.script, FlakyTarget.reachable, FlakyTarget.deploys = [], True, 0
    return open_store(f"sqlite:///{tmp_path}/s.db")


def run(engine, resume: bool = False):
    return Runner(parse_campaign(CAMPAIGN, "flaky.toml"), engine, Console(quiet=True)).run(resume=resume)


def test_a_lost_measurement_is_stored_with_the_log_and_retried(flaky):
    FlakyTarget.script = ["lose", "ok", "ok"]
    outcome = run(flaky)
    r = load_run(flaky, outcome.run_id)
    assert r.status == "finished"
    assert sorted((m.status, m.attempt) for m in r.measurements) == [("ok", 1), ("ok", 2)]
    [lost] = r.failed_attempts
    assert (lost.status, lost.attempt) == ("error", 1)
    assert "died" in lost.error and "Kernel panic" in lost.target_log
    assert FlakyTarget.deploys == 2             # the first reach, and again after the loss
    assert all(m.result() is not None for m in r.measurements)


def test_a_measurement_lost_twice_is_an_error_and_the_campaign_goes_on(flaky):
    FlakyTarget.script = ["lose", "lose", "ok"]
    r = load_run(flaky, run(flaky).run_id)
    assert r.status == "finished"
    assert sorted((m.status, m.attempt) for m in r.measurements) == [("error", 2), ("ok", 1)]
    assert [m.attempt for m in r.failed_attempts] == [1]
    [failed] = [m for m in r.measurements if m.status == "error"]
    assert failed.target_log == CONSOLE


def test_an_unreachable_target_ends_the_run_resumable(flaky):
    FlakyTarget.script = ["lose"]
    reach = FlakyTarget.deploy_probe

    def unreachable_after_loss(self):
        # The first reach works; the reconnect after the loss does not.
        if FlakyTarget.deploys >= 1:
            FlakyTarget.reachable = False
        return reach(self)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(FlakyTarget, "deploy_probe", unreachable_after_loss)
        with pytest.raises(TargetError, match="--resume"):
            run(flaky)
    [r] = [load_run(flaky, 1)]
    assert r.status == "interrupted"
    assert [(m.status, m.attempt) for m in r.measurements] == [("error", 1)]

    FlakyTarget.reachable = True                # the board is back
    r = load_run(flaky, run(flaky, resume=True).run_id)
    assert r.status == "finished" and r.id == 1
    assert sorted((m.status, m.attempt) for m in r.measurements) == [("ok", 1), ("ok", 2)]


def test_the_report_shows_the_failure_and_the_target_log(flaky):
    import json

    from rtvbench.analysis.evaluation import evaluate_run
    from rtvbench.report.html import render_html
    from rtvbench.report.json_export import render_json
    from rtvbench.report.markdown import render_markdown
    FlakyTarget.script = ["lose", "ok", "ok"]
    ev = evaluate_run(load_run(flaky, run(flaky).run_id))
    doc = json.loads(render_json(ev))
    [lost] = doc["failed_attempts"]
    assert lost["attempt"] == 1 and lost["target_log"] == CONSOLE
    assert sorted(m["attempt"] for m in doc["measurements"]) == [1, 2]
    html = render_html(ev)
    assert "Target failures" in html and "Kernel panic - not syncing: test" in html
    assert "attempt 1</summary>" not in html and "attempt 1: the guest of environment flaky died" in html
    assert "Kernel panic - not syncing: test" in render_markdown(ev)


def test_show_lists_the_failed_attempt(flaky, tmp_path):
    from click.testing import CliRunner

    from rtvbench.cli import cli
    FlakyTarget.script = ["lose", "ok", "ok"]
    run_id = run(flaky).run_id
    r = CliRunner().invoke(cli, ["show", str(run_id), "--store", f"sqlite:///{tmp_path}/s.db"])
    said = " ".join(r.output.split())
    assert "Failed attempt 1 of flaky / idle / wakeup" in said and "the guest of environment flaky died" in said
    assert f"rtvbench report --campaign {run_id}" in said
