"""End to end with the real probe: run a campaign with an idle and a busy load, then
check the store row by row, the load's lifetime, and that no load process is left."""

from __future__ import annotations

import json
import re
import socket
import sqlite3
import uuid
from collections import Counter

import pytest

from host_helpers import busy_command, cli_env, kill_all, latency_campaign, processes_with, run_cli
from rtvbench.store import load_run, open_store

DURATION_S, INTERVAL_US, REPS = 1, 500, 3


@pytest.fixture
def marker():
    """Names this test's load processes; whatever survives a failed test is killed."""
    m = f"rtvb-test-{uuid.uuid4().hex}"
    yield m
    kill_all(m)


def test_campaign_runs_into_the_store(tmp_path, probe, marker):
    log = tmp_path / "load.log"
    command = busy_command(marker, log)
    (tmp_path / "c.toml").write_text(
        latency_campaign("e2e", command, repetitions=REPS, duration_s=DURATION_S,
                         interval_us=INTERVAL_US))
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=cli_env(probe))
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert "Run 1 of e2e finished: 6 of 6 measurements ok." in r.stdout

    run = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), 1)
    assert run.status == "finished" and run.campaign_text == (tmp_path / "c.toml").read_text()
    # One fingerprint per environment, from this machine.
    assert list(run.fingerprints) == ["native"]
    assert run.fingerprints["native"]["hostname"] == socket.gethostname()
    # environments x loads x benchmarks x repetitions, each exactly once.
    assert Counter((m.load, m.repetition) for m in run.measurements) == {
        (load, rep): 1 for load in ("idle", "busy") for rep in range(REPS)}
    for m in run.measurements:
        assert m.status == "ok", m.error
        assert m.command == [str(probe), "latency", "--interval-us", str(INTERVAL_US), "--duration-s",
                             str(DURATION_S), "--policy", "other", "--cpus", "0", "--threshold-us",
                             "100", "--window-s", "0.5", "--mode", "abstime"]
        assert m.meta["argv"] == m.command[1:]
        assert m.load_commands == ([] if m.load == "idle" else [command])
        # One result for CPU 0, one merged: both count every activation of 1 s at 500 us.
        assert [res["cpu"] for res in m.results] == [0, "all"]
        expected = DURATION_S * 1e6 / INTERVAL_US
        assert abs(m.result("all")["count"] + m.result("all")["missed"] - expected) <= 0.02 * expected
        # Windows of 0.5 s over 1 s: two full ones, perhaps a last partial one.
        assert [w["index"] for w in m.windows][:2] == [0, 1] and len(m.windows) <= 3
        assert m.started_at < m.finished_at

    # The order is the seeded shuffle, not load by load.
    loads_in_order = [m.load for m in run.measurements]
    assert loads_in_order != sorted(loads_in_order) and loads_in_order != sorted(loads_in_order, reverse=True)

    # The busy load ran from before each busy measurement's probe started until after it ended.
    events = [line.split() for line in log.read_text().splitlines()]
    starts = [int(ns) for what, _, ns in events if what == "start"]
    stops = [int(ns) for what, _, ns in events if what == "stop"]
    assert len(starts) == len(stops) == REPS
    for m in (m for m in run.measurements if m.load == "busy"):
        begin = m.meta["start_realtime_ns"]
        end = begin + next(x for x in m_records(tmp_path, m.id) if x["type"] == "end")["elapsed_ns"]
        assert any(s < begin and end < t for s, t in zip(sorted(starts), sorted(stops))), (begin, end)

    assert processes_with(marker) == []
    # The colleague's report stage is installed: `run` wrote the HTML report.
    report = tmp_path / "rtvbench-results" / "e2e-1.html"
    assert f"Report: {report}" in r.stdout.splitlines()[-1]         # absolute, the last line
    # Before it, the headline: each cell's medians as the report's key results have them.
    assert "Key results of the latency benchmarks" in r.stdout
    from rtvbench.analysis.evaluation import evaluate_run
    from rtvbench.units import format_value
    ev = evaluate_run(run)
    for load in ("idle", "busy"):
        median = format_value(ev.summary("native", load, "wakeup", "p99_us").median, "us")
        assert re.search(rf"│ wakeup\s+│ native\s+│ {load}\s+│ .*│\s+{re.escape(median)} │", r.stdout), (median, r.stdout)
    assert report.stat().st_size > 1000


def m_records(tmp_path, measurement_id: int) -> list[dict]:
    with sqlite3.connect(tmp_path / "s.db") as conn:
        rows = conn.execute("select seq, data from records where measurement_id = ? order by seq",
                            (measurement_id,)).fetchall()
    assert [seq for seq, _ in rows] == list(range(1, len(rows) + 1))
    return [json.loads(d) for _, d in rows]


def test_list_and_show(tmp_path, probe):
    (tmp_path / "c.toml").write_text(latency_campaign("tiny", "sleep 30", repetitions=1, duration_s=0.2))
    env = cli_env(probe)
    assert run_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=env).returncode == 0
    r = run_cli("--store", "sqlite:///s.db", "list", cwd=tmp_path, env=env)
    assert r.returncode == 0
    assert "│ 1  │ tiny     │ finished │ 2/2" in r.stdout
    r = run_cli("show", "1", "--store", "sqlite:///s.db", cwd=tmp_path, env=env)
    assert r.returncode == 0
    assert "Run 1: campaign tiny, finished" in r.stdout and r.stdout.count(" ok ") == 2
    r = run_cli("show", "7", "--store", "sqlite:///s.db", cwd=tmp_path, env=env)
    assert (r.returncode, r.stderr.strip()) == (2, "rtvbench: there is no run 7 in the store; "
                                                   "`rtvbench list` shows the runs.")
    r = run_cli("report", "--campaign", "tiny", "--format", "json", "-o", "out.json",
                "--store", "sqlite:///s.db", cwd=tmp_path, env=env)
    assert r.returncode == 0 and f"Report: {tmp_path / 'out.json'}" in r.stdout
    assert (tmp_path / "out.json").stat().st_size > 100
