"""Time and size bounds that hold whatever a measured command or probe does: a command that ignores
SIGTERM, one that leaves a process holding its stdout, `{output}` that is a FIFO, a symbolic link to
/dev/zero or a directory, a probe that prints `end` and never exits, a probe that never ends. Each
fails its own measurement in one sentence, the run goes on, and nothing is left running. The
local target here (the ssh target's part: tests/test_ssh_deadlines.py).

The bounds asserted are hang guards: each command would run for a minute (the probes for ten) if
it were not stopped, and the limits are far below that and far above what stopping takes."""

from __future__ import annotations

import json
import os
import uuid

import pytest
from rich.console import Console

from host_helpers import (FAKE_PROBE, check_reads_only_small_regular_files, cli_env, kill_all, processes_with,
                          run_cli)
from rtvbench.benchmarks import base as benchmarks_base
from rtvbench.campaign.reader import parse_campaign
from rtvbench.runner import run as runner_run
from rtvbench.runner.run import Runner
from rtvbench.store import load_run, open_store
from rtvbench.targets.base import KILL_GRACE_S, Deadline
from rtvbench.targets.local import LocalParams, LocalTarget

pytestmark = pytest.mark.functional

STORE = "sqlite:///s.db"
# A command that would outlive any bound here by far: every test names its own, to find its processes.
LONG_S = 60


def _marker() -> str:
    """A sleep duration no other process on the machine uses: `sleep 60.<random>`."""
    return f"{LONG_S}.{uuid.uuid4().int % 10**9:09d}"


def _campaign(benchmarks: dict[str, dict]) -> str:
    lines = ['name = "bounds"', "[environments.native]", 'target = "local"']
    for name, keys in benchmarks.items():
        lines += [f"[benchmarks.{name}]"] + [f"{k} = {json.dumps(v)}" for k, v in keys.items() if k != "figures"]
        for figure in keys.get("figures", []):
            lines += [f"[[benchmarks.{name}.figures]]"] + [f"{k} = {json.dumps(v)}" for k, v in figure.items()]
    return "\n".join(lines) + "\n"


def _seconds(m) -> float:
    return (m.finished_at - m.started_at).total_seconds()


OK = {"kind": "command", "command": "echo value: 3", "format": "mapping",
      "figures": [{"name": "value", "regex": "value: ([0-9]+)"}]}


def test_hung_commands_and_odd_output_files_fail_in_one_sentence_and_leave_nothing(tmp_path, probe):
    term, child = _marker(), _marker()
    odd = {"kind": "command", "format": "hyperfine-json"}
    (tmp_path / "c.toml").write_text(_campaign({
        "before": OK,
        "ignores_term": {"kind": "command", "command": f"sh -c 'trap \"\" TERM; sleep {term}'",
                         "format": "hyperfine-json", "timeout_s": 1},
        "grandchild": {"kind": "command", "command": f"sh -c 'sleep {child} & echo x'",
                       "format": "hyperfine-json", "timeout_s": 1},
        "fifo": {**odd, "command": "mkfifo {output}"},
        "zero": {**odd, "command": "ln -s /dev/zero {output}"},
        "directory": {**odd, "command": "mkdir {output}"},
        "after": OK,
    }))
    try:
        # The hang guard: either hung command alone would take a minute.
        r = run_cli("run", "c.toml", "--store", STORE, cwd=tmp_path, env=cli_env(probe), timeout=110)
    finally:
        leftovers = processes_with(f"sleep {term}") + processes_with(f"sleep {child}")
        kill_all(f"sleep {term}")
        kill_all(f"sleep {child}")
    assert r.returncode == 0, r.stderr           # some measurements succeeded, no requirement failed
    assert leftovers == [], "a stopped command left processes behind"
    run = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), 1)
    by_name = {m.benchmark: m for m in run.measurements}
    errors = {name: (m.status, m.error) for name, m in by_name.items()}
    not_regular = ("in environment native is not a regular file (a symbolic link, FIFO, device or directory), "
                   "so it was not read")
    assert errors["before"] == errors["after"] == ("ok", None)
    assert errors["ignores_term"] == ("error", "the command did not end within timeout_s = 1 s; `timeout` sent "
                                               f"it SIGTERM, then SIGKILL after {KILL_GRACE_S:g} s")
    assert errors["grandchild"] == ("error", f"the command did not end within timeout_s = 1 s and the {KILL_GRACE_S:g} "
                                             "s after it (its output stayed open, or `timeout` did not stop it); "
                                             "rtvbench sent its process group SIGTERM")
    for name in ("fifo", "zero", "directory"):
        status, error = errors[name]
        assert status == "error" and error.startswith("the command's output file /tmp/rtvbench-output-"), error
        assert error.endswith(not_regular), error
    assert _seconds(by_name["ignores_term"]) < LONG_S / 2
    assert _seconds(by_name["grandchild"]) < LONG_S / 2
    # Nothing the odd commands made is left in /tmp (the directory included).
    for name in ("fifo", "zero", "directory"):
        path = errors[name][1].split()[4]
        assert not os.path.lexists(path), path


def _probe_campaign(*benchmarks: str) -> str:
    return _campaign({name: {"kind": "latency", "duration_s": 0.3, "interval_us": 1000, "policy": "other"}
                      for name in benchmarks} | {"after": OK})


def _run_in_process(tmp_path, monkeypatch, mode: str, campaign: str):
    """Run `campaign` in this process with the fake probe in `mode`; (stored run, what was left)."""
    # The fake probe under a name of this test's own: other tests that run it at the same time (make
    # test runs several at once) are neither counted as this one's leftovers nor killed with them.
    probe = tmp_path / "fake-probe"
    probe.symlink_to(FAKE_PROBE)
    monkeypatch.setenv("RTVBENCH_PROBE", str(probe))
    monkeypatch.setenv("FAKE_PROBE_MODE", mode)
    engine = open_store(f"sqlite:///{tmp_path}/s.db")
    try:
        outcome = Runner(parse_campaign(campaign, str(tmp_path / "c.toml")), engine, Console(quiet=True)).run()
    finally:
        leftovers = processes_with(str(probe))
        kill_all(str(probe))
    return load_run(engine, outcome.run_id), leftovers


def test_a_probe_that_prints_end_and_never_exits_is_killed_and_the_run_goes_on(tmp_path, monkeypatch):
    # The time a probe has after its `end` made short; the fake probe ignores SIGTERM and sleeps
    # ten minutes after its `end`.
    monkeypatch.setattr(benchmarks_base, "AFTER_END_S", 2.0)
    monkeypatch.setattr(runner_run, "AFTER_END_S", 2.0)
    run, leftovers = _run_in_process(tmp_path, monkeypatch, "linger", _probe_campaign("lingers"))
    assert leftovers == [], "the watchdog left the probe running"
    assert run.status == "finished"
    by_name = {m.benchmark: m for m in run.measurements}
    assert (by_name["after"].status, by_name["after"].error) == ("ok", None)
    m = by_name["lingers"]
    assert (m.status, m.error) == ("error", "the probe printed its `end` record but did not exit within 2 s; "
                                            "rtvbench sent its process group SIGTERM, then SIGKILL after "
                                            f"{KILL_GRACE_S:g} s")
    assert m.results, "the records it printed before are kept"


def test_a_probe_that_never_ends_is_stopped_by_the_watchdog(tmp_path, monkeypatch):
    # The watchdog's margin made small: the campaign's probe expects 0.3 s and sleeps ten minutes.
    monkeypatch.setattr(benchmarks_base, "WATCHDOG_MARGIN_S", 2.0)
    monkeypatch.setattr(runner_run, "WATCHDOG_MARGIN_S", 2.0)
    run, leftovers = _run_in_process(tmp_path, monkeypatch, "hang", _probe_campaign("hangs"))
    assert leftovers == []
    assert run.status == "finished"
    by_name = {m.benchmark: m for m in run.measurements}
    assert (by_name["after"].status, by_name["after"].error) == ("ok", None)
    m = by_name["hangs"]
    # SIGTERM ends it: no SIGKILL is said.
    assert (m.status, m.error) == ("error", "the probe did not end within the watchdog's 5 s (10 × its expected "
                                            "0.3 s, plus 2 s); rtvbench sent its process group SIGTERM")
    assert m.meta is not None


def test_a_process_that_left_the_group_cannot_hold_the_local_target(tmp_path):
    marker = _marker()
    target = LocalTarget("native", LocalParams())
    lines: list[str] = []
    try:
        # A grandchild in a session of its own is out of the group's reach: the host stops reading.
        done = target.run(["sh", "-c", f"trap '' TERM; setsid sleep {marker} & echo end; sleep {marker}"],
                          lines.append, Deadline(0.5))
    finally:
        stray = processes_with(f"sleep {marker}")
        kill_all(f"sleep {marker}")
    assert lines == ["end"]
    assert (done.overdue, done.killed, done.returncode) == (True, True, -9), done
    # Only the process that left the group survived it (and was killed above).
    assert len(stray) == 1


def test_a_file_is_read_on_this_machine_only_when_it_is_a_small_regular_file(tmp_path):
    check_reads_only_small_regular_files(LocalTarget("native", LocalParams()), tmp_path)
