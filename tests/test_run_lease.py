"""One runner per run: `run --resume` refuses a run whose runner is alive (two real-time probes on one CPU,
a cell stored twice), and takes over one whose runner is gone — at once when it ran on this machine and
its process is dead, after its heartbeat went stale when it ran elsewhere (a shared store)."""

from __future__ import annotations

import signal
import socket
import sqlite3
import uuid
from datetime import datetime, timedelta, timezone

import pytest

from host_helpers import (busy_command, cli_env, kill_all, load_running, run_cli, start_cli, wait_for,
                          waiting_benchmark)
from rtvbench.store import list_runs, open_store
from rtvbench.store.lease import HEARTBEAT_STALE_S

pytestmark = pytest.mark.functional


@pytest.fixture
def marker():
    m = f"rtvb-test-{uuid.uuid4().hex}"
    yield m
    kill_all(m)


def _runs(db):
    try:
        with sqlite3.connect(db) as conn:
            return conn.execute("select id, status, runner, heartbeat_at from runs").fetchall()
    except sqlite3.OperationalError:            # the store is being created
        return []


def _held_campaign(marker: str, hold, log) -> str:
    """Loads idle and busy; a short latency benchmark and one that waits for the file `hold`: until the
    test creates it, the run cannot end, however fast or slow the machine is."""
    return f'''
name = "lease"
repetitions = 3
seed = 1

[environments.native]
target = "local"

[loads.idle]
[loads.busy]
command = "{busy_command(marker, log)}"
settle_s = 0

[benchmarks.wakeup]
kind = "latency"
interval_us = 1000
loops = 50
policy = "other"
cpus = [0]

''' + waiting_benchmark("hold", f"[ ! -e {hold} ]", tag=marker)


def test_a_live_run_is_not_resumed_and_a_killed_one_is(tmp_path, probe, marker):
    # The run cannot end before the test creates HOLD: it is still running whenever the test looks (a run
    # of fixed length could have ended before the second CLI started, on a busy machine).
    hold = tmp_path / "HOLD"
    (tmp_path / "c.toml").write_text(_held_campaign(marker, hold, tmp_path / "load.log"))
    env = cli_env(probe)
    db = tmp_path / "s.db"
    runner = start_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=env)
    try:
        wait_for(lambda: db.exists() and _runs(db) and _runs(db)[0][2], 120, "the run to be claimed")
        [(run_id, status, owner, beat)] = _runs(db)
        assert status == "running" and owner.startswith(f"{socket.gethostname()}:{runner.pid}:")
        r = run_cli("run", "--resume", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=env)
        assert r.returncode == 2, r.stderr
        assert r.stderr.strip().splitlines()[-1] == (
            f"rtvbench: run {run_id} of campaign \"lease\" is being run by another rtvbench (process "
            f"{runner.pid} on {socket.gethostname()}); wait for it to end or stop it, then resume.")
        assert runner.poll() is None, "the held run ended by itself"
        assert list_runs(open_store(f"sqlite:///{db}", write=False))[0]["status"] == "running"
        runner.send_signal(signal.SIGKILL)
        runner.wait(10)
    finally:
        if runner.poll() is None:
            runner.kill()
    kill_all(marker)
    # Until it is resumed, `list` says the run was abandoned rather than running for ever.
    assert list_runs(open_store(f"sqlite:///{db}", write=False))[0]["status"] == "abandoned"
    # Its process is gone: the run is taken over at once and finished, each cell once.
    hold.touch()
    r = run_cli("run", "--resume", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    [(_, status, owner, _)] = _runs(db)
    assert status == "finished" and owner is None
    with sqlite3.connect(db) as conn:
        ok = conn.execute("select benchmark, load, repetition, count(*) from measurements where status = 'ok' "
                          "group by benchmark, load, repetition").fetchall()
    assert sorted(ok) == [(b, ld, rep, 1) for b in ("hold", "wakeup") for ld in ("busy", "idle") for rep in range(3)]


def test_a_run_held_elsewhere_is_taken_over_only_when_its_heartbeat_is_stale(store_url):
    from sqlalchemy import select, update

    from rtvbench.campaign.reader import parse_campaign
    from rtvbench.errors import InputError
    from rtvbench.store.schema import runs
    from rtvbench.store.writer import RunRecorder

    engine = open_store(store_url)
    c = parse_campaign('name = "shared"\n[environments.n]\ntarget = "local"\n'
                       '[benchmarks.w]\nkind = "latency"\nloops = 10\n')
    rec = RunRecorder.create(engine, c)
    other = "board-farm-7:4242:99"
    fresh = datetime.now(timezone.utc)
    with engine.begin() as conn:
        conn.execute(update(runs).values(runner=other, heartbeat_at=fresh))
    with pytest.raises(InputError, match="process 4242 on board-farm-7"):
        RunRecorder.claim(engine, rec.id, c.name)
    stale = fresh - timedelta(seconds=HEARTBEAT_STALE_S + 5)
    with engine.begin() as conn:
        conn.execute(update(runs).values(heartbeat_at=stale))
    taken = RunRecorder.claim(engine, rec.id, c.name)
    with engine.connect() as conn:
        holder = conn.scalar(select(runs.c.runner))
    assert taken.id == rec.id and holder not in (None, other)


def test_resume_measures_again_what_failed_in_a_finished_run(tmp_path, probe):
    # The load fails the first time it starts (no flag file yet) and works from then on.
    flag, ready = tmp_path / "flag", tmp_path / "ready"
    script = tmp_path / "load.sh"
    script.write_text(f'if [ -e {flag} ]; then touch {ready}; exec sleep 3600; fi\ntouch {flag}\n'
                      'echo "not ready" >&2\nexit 1\n')
    # The runner judges a load by whether it is still running when the benchmark ends: the benchmark
    # waits until the load has either failed or said it is ready. One of fixed length could end before a
    # slow machine got round to the failure, and the failed run would be "2 of 2 ok".
    (tmp_path / "c.toml").write_text(
        'name = "again"\n[environments.native]\ntarget = "local"\n'
        f'[loads.idle]\n[loads.flaky]\ncommand = "sh {script}"\n'
        + waiting_benchmark("w", f"{load_running(str(script))} && [ ! -e {ready} ]"))
    env = cli_env(probe)
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=env)
    assert "1 of 2 measurements ok" in r.stdout, r.stdout + r.stderr
    r = run_cli("run", "--resume", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    assert "Resuming campaign again (run 1): 1 measurement(s)" in r.stderr
    assert "Run 1 of again finished: 2 of 2 measurements ok." in r.stdout
    r = run_cli("run", "--resume", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=env)
    assert r.returncode == 2 and "has no unfinished run to resume" in r.stderr
