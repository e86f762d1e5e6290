"""Ctrl-C and SIGTERM stop a run whose lanes measure at once (`rtvbench run --jobs`) as they stop a
run of one lane: every board's measurement is asked to stop, drained and stored as interrupted, the
run is saved, and `run --resume` measures what was cut short. Three sshd boards, each in a network
namespace of its own (tests/helpers/farm.py)."""

from __future__ import annotations

import signal
import sqlite3

import pytest

from helpers.farm import boards_fixture, write_campaign
from host_helpers import cli_env, processes_with, start_cli, wait_for
from rtvbench.store import load_run, open_store

pytestmark = pytest.mark.functional

REPS = 2
#: long enough that the signal finds every board measuring; it ends the wait long before
WAIT_S = 60

sshd_boards = boards_fixture()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_every_lane_and_the_run_resumes(sshd_boards, tmp_path, probe, sig):
    write_campaign(tmp_path, sshd_boards, f"farm-{sig.name}", REPS, WAIT_S)
    db = tmp_path / "s.db"
    env = cli_env(probe)

    def running() -> list[str]:
        try:
            with sqlite3.connect(db) as conn:
                return [e for (e,) in conn.execute("select environment from measurements where status = 'running'")]
        except sqlite3.OperationalError:            # not created yet
            return []
    runner = start_cli("run", "c.toml", "--jobs", "3", "--store", "sqlite:///s.db", cwd=tmp_path, env=env)
    try:
        wait_for(lambda: len(running()) == 3 and len(processes_with(f"sleep {WAIT_S}")) >= 3, 60,
                 "every board measuring")
        runner.send_signal(sig)
        out, err = runner.communicate(timeout=60)       # a hang guard: the waits are cut short
    finally:
        if runner.poll() is None:
            runner.kill()
    assert runner.returncode == 130, err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("Interrupted: run 1 is saved with every finished measurement")
    # Each board's command was stopped. One that did not stop within the grace (a busy machine) is
    # killed by the board's wrapper when its connection closes, a moment after the run ended: wait for
    # that, for less than the command's own sleep, so one left running still fails.
    wait_for(lambda: not processes_with(f"sleep {WAIT_S}"), WAIT_S / 2, "each board's command to end")
    engine = open_store(f"sqlite:///{db}")
    run = load_run(engine, 1)
    assert run.status == "interrupted"
    assert sorted((m.environment, m.status) for m in run.measurements) == [
        ("b1", "interrupted"), ("b2", "interrupted"), ("b3", "interrupted")], [m.error for m in run.measurements]
    assert all(m.finished_at is not None for m in run.measurements)

    # Resuming measures what the signal cut short and the rest, in lanes again; stopped the same way.
    runner = start_cli("run", "--resume", "c.toml", "--jobs", "3", "--store", "sqlite:///s.db", cwd=tmp_path,
                       env=env)
    try:
        wait_for(lambda: len(running()) == 3, 60, "every board measuring again")
        runner.send_signal(sig)
        out, err = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
    assert runner.returncode == 130, err
    assert "Resuming campaign" in err and f"{3 * REPS} measurement(s) in 3 lanes, 3 at once" in err
    with sqlite3.connect(db) as conn:
        rows = conn.execute("select environment, attempt, status from measurements order by id").fetchall()
    assert sorted(rows) == [(env, attempt, "interrupted") for env in ("b1", "b2", "b3") for attempt in (1, 2)]
