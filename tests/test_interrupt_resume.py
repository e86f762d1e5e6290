"""A runner that is killed (SIGKILL) or interrupted (SIGINT) mid-campaign leaves a
consistent store and no load process, and `run --resume` completes the rest
without repeating or duplicating a measurement."""

from __future__ import annotations

import signal
import sqlite3
import uuid
from collections import Counter

import pytest

from host_helpers import (busy_command, cli_env, kill_all, latency_campaign, processes_with,
                          run_cli, start_cli, wait_for)
from rtvbench.store import load_run, open_store

REPS = 3


def statuses(db) -> list[tuple]:
    """(id, load, repetition, attempt, status) of every measurement row, even stale ones."""
    try:
        with sqlite3.connect(db) as conn:
            return conn.execute("select id, load, repetition, attempt, status from measurements "
                                "order by id").fetchall()
    except sqlite3.OperationalError:            # not created yet
        return []


@pytest.fixture
def marker():
    """Names this test's load processes; whatever survives a failed test is killed."""
    m = f"rtvb-test-{uuid.uuid4().hex}"
    yield m
    kill_all(m)


def setup(tmp_path, name: str, marker: str):
    (tmp_path / "c.toml").write_text(latency_campaign(
        name, busy_command(marker, tmp_path / "load.log"), repetitions=REPS, duration_s=1))
    return tmp_path / "s.db"


def busy_measurement_running(db, marker):
    rows = statuses(db)
    return rows and rows[-1][1] == "busy" and rows[-1][4] == "running" and processes_with(marker)


def test_sigkill_then_resume(tmp_path, probe, marker):
    db = setup(tmp_path, "killed", marker)
    env = cli_env(probe)
    runner = start_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=env)
    try:
        # Kill it while a busy measurement runs, after at least two finished.
        wait_for(lambda: sum(r[4] == "ok" for r in statuses(db)) >= 2
                 and busy_measurement_running(db, marker), 60, "two finished measurements and a busy one")
        wait_for(lambda: len(last_records(db)) >= 2, 5, "a window record")
        runner.send_signal(signal.SIGKILL)
        runner.wait(10)
    finally:
        if runner.poll() is None:
            runner.kill()
    # The load dies with the runner: its supervisor sees the runner's pipe close.
    wait_for(lambda: not processes_with(marker), 10, "the load processes to end")
    # ... and so does the probe (PR_SET_PDEATHSIG).
    wait_for(lambda: not processes_with(f"{probe} latency"), 5, "the probe to end")
    # ... and the thermal sampler, which runs without a supervisor.
    wait_for(lambda: not processes_with(f"{probe} sample"), 5, "the thermal sampler to end")

    before = statuses(db)
    finished_before = {r[0] for r in before if r[4] == "ok"}
    assert len(finished_before) >= 2 and before[-1][4] == "running"
    engine = open_store(f"sqlite:///{db}")
    killed = load_run(engine, 1)                         # loads despite the half-done measurement
    assert killed.status == "running"
    partial = next(m for m in killed.measurements if m.status == "running")
    assert partial.meta is not None and partial.windows and partial.results == []   # what arrived is kept
    for m in killed.measurements:
        if m.status == "ok":
            assert m.result("all")["count"] > 0

    r = run_cli("run", "--resume", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    assert f"Resuming campaign killed (run 1): {2 * REPS - len(finished_before)} measurement(s)" in r.stderr

    run = load_run(engine, 1)
    assert run.status == "finished"
    assert Counter((m.load, m.repetition) for m in run.measurements) == {
        (load, rep): 1 for load in ("idle", "busy") for rep in range(REPS)}
    assert all(m.status == "ok" for m in run.measurements)
    # Finished measurements were kept, not repeated; only the killed one ran again.
    assert finished_before <= {m.id for m in run.measurements}
    after = statuses(db)
    assert len(after) == 2 * REPS + 1
    assert [r[3] for r in after].count(2) == 1
    # The attempt the kill cut short is no longer "running" for ever: it is an error, retried.
    [cut] = [r for r in after if r[3] == 1 and r[4] != "ok"]
    assert cut[4] == "error" and [f.attempt for f in run.failed_attempts] == [1]
    assert len(run.fingerprints) == 1
    with sqlite3.connect(db) as conn:
        assert conn.execute("select count(*) from runs").fetchone() == (1,)
        assert conn.execute("select count(*) from fingerprints").fetchone() == (1,)
    assert not processes_with(marker)

    # Nothing left to resume now.
    r = run_cli("run", "--resume", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=env)
    assert (r.returncode, r.stderr.strip()) == (2, 'rtvbench: campaign "killed" has no unfinished run to '
                                                   "resume; start a new one with `rtvbench run` without --resume.")


def test_ctrl_c_stops_cleanly(tmp_path, probe, marker):
    db = setup(tmp_path, "interrupted", marker)
    env = cli_env(probe)
    runner = start_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=env)
    try:
        wait_for(lambda: busy_measurement_running(db, marker), 60, "a busy measurement")
        wait_for(lambda: len(last_records(db)) >= 2, 5, "a window record")
        runner.send_signal(signal.SIGINT)
        out, err = runner.communicate(timeout=20)
    finally:
        if runner.poll() is None:
            runner.kill()
    assert runner.returncode == 130, err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == (
        "Interrupted: run 1 is saved with every finished measurement; continue it with "
        "`rtvbench run --resume --store sqlite:///s.db c.toml`.")
    assert not processes_with(marker)           # stopped before the runner exited
    run = load_run(open_store(f"sqlite:///{db}"), 1)
    assert run.status == "interrupted" and run.finished_at is not None
    last = run.measurements[-1]
    assert last.status == "interrupted" and last.load == "busy"
    # The probe got SIGINT, printed its results so far and `end interrupted`.
    assert last_records(db)[-1] == "end:interrupted"
    assert 0 < last.result("all")["count"] < 2000

    # Resuming needs the same campaign text.
    (tmp_path / "c.toml").write_text((tmp_path / "c.toml").read_text().replace("seed = 1", "seed = 2"))
    r = run_cli("run", "--resume", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=env)
    assert (r.returncode, r.stderr.strip()) == (2, "rtvbench: c.toml changed since run 1 started; restore "
                                                   "it to resume that run, or start a new run without --resume.")


def last_records(db) -> list[str]:
    """type (and end status) of the newest measurement's records."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute("select type, json_extract(data, '$.status') from records where measurement_id ="
                            " (select max(id) from measurements) order by seq").fetchall()
    return [t if s is None else f"{t}:{s}" for t, s in rows]
