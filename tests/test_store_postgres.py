"""The store on PostgreSQL (a throwaway server of the tests' own, tests/postgres_server.py): the URLs and
the driver, then real campaigns, a runner killed and resumed, and two runners storing at once.
The store's own tests run on PostgreSQL too (the `store_url` fixture)."""

from __future__ import annotations

import json
import re
import signal
import socket
import sys
import uuid
from collections import Counter

import pytest
from sqlalchemy import create_engine
from sqlalchemy.exc import ProgrammingError

from host_helpers import (busy_command, cli_env, kill_all, latency_campaign, processes_with, run_cli,
                          start_cli, wait_for)
from rtvbench.cli import main
from rtvbench.errors import StoreError
from rtvbench.store import list_runs, load_run, open_store
from rtvbench.store.db import SCHEMA_HEAD


def test_without_the_driver_a_postgresql_url_names_the_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "psycopg", None)          # as if it were not installed
    with pytest.raises(SystemExit) as exc:
        main(["list", "--store", "postgresql://ci:secret@db.example/results"])
    assert exc.value.code == StoreError.exit_code
    assert capsys.readouterr().err.strip() == (
        "rtvbench: --store postgresql+psycopg://ci:***@db.example/results: the PostgreSQL driver psycopg is "
        "not installed; install it with `pip install 'rtvbench[postgres]'`.")


@pytest.mark.functional
def test_a_plain_postgresql_url_is_psycopg(postgres_server):
    url = postgres_server.url(postgres_server.create_database(), driver="postgresql")
    engine = open_store(url)
    assert engine.dialect.driver == "psycopg"
    with engine.connect() as conn:
        assert conn.exec_driver_sql("select version_num from alembic_version").scalar() == SCHEMA_HEAD


@pytest.mark.functional
def test_a_campaign_runs_into_postgresql_and_reports_from_it(tmp_path, probe, postgres_url):
    (tmp_path / "c.toml").write_text(latency_campaign("pg", None, repetitions=2, duration_s=0.5, interval_us=1000))
    env = cli_env(probe)
    r = run_cli("run", "c.toml", "--store", postgres_url, cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    assert "Run 1 of pg finished: 2 of 2 measurements ok." in r.stdout

    r = run_cli("report", "--store", postgres_url, "--format", "json", "-o", "-", cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    stored = load_run(open_store(postgres_url, write=False), 1)
    assert stored.campaign_text == (tmp_path / "c.toml").read_text()
    assert stored.fingerprints["native"]["hostname"] == socket.gethostname()
    # The export counts repetitions from 1, the store from 0.
    exports = {(m["environment"], m["load"], m["benchmark"], m["repetition"] - 1): m for m in doc["measurements"]}
    assert sorted(exports) == [("native", "idle", "wakeup", 0), ("native", "idle", "wakeup", 1)]
    assert sorted((m.environment, m.load, m.benchmark, m.repetition) for m in stored.measurements) == sorted(exports)
    for m in stored.measurements:
        exported = exports[(m.environment, m.load, m.benchmark, m.repetition)]
        assert m.status == "ok" and m.windows
        assert {"before", "after", "processes_before", "processes_after", "loadavg_after"} <= set(m.cpu_stat)
        # 0.5 s at 1 ms: the report's count is the stored result's, which is the probe's.
        assert exported["figures"]["count"] == m.result("all")["count"]
        assert abs(m.result("all")["count"] + m.result("all")["missed"] - 500) <= 10

    r = run_cli("list", "--json", "--store", postgres_url, cwd=tmp_path, env=env)
    [listed] = json.loads(r.stdout)
    assert (listed["id"], listed["campaign"], listed["status"], listed["measurements"], listed["measurements_ok"]) == (
        1, "pg", "finished", 2, 2)


@pytest.fixture
def marker():
    """Names this test's load processes; whatever survives a failed test is killed."""
    m = f"rtvb-test-{uuid.uuid4().hex}"
    yield m
    kill_all(m)


def _rows(engine, sql: str) -> list[tuple]:
    """The rows of a query on the store, none while a runner is still creating it."""
    try:
        with engine.connect() as conn:
            return [tuple(r) for r in conn.exec_driver_sql(sql)]
    except ProgrammingError:
        return []


MEASUREMENTS = "select id, load, repetition, attempt, status from measurements order by id"


def test_sigkill_then_resume_on_postgresql(tmp_path, probe, marker, postgres_url):
    """test_interrupt_resume's SIGKILL case, shorter, on PostgreSQL: what was committed before the kill is
    there, the cut measurement is an error measured again, nothing is measured twice."""
    (tmp_path / "c.toml").write_text(latency_campaign("killed", busy_command(marker, tmp_path / "load.log"),
                                                      repetitions=2, duration_s=1, interval_us=1000))
    env = cli_env(probe)
    watch = create_engine(postgres_url)
    newest_records = ("select count(*) from records where measurement_id = (select max(id) from measurements) "
                      "and type in ('meta', 'window')")
    runner = start_cli("run", "c.toml", "--store", postgres_url, cwd=tmp_path, env=env)
    try:
        wait_for(lambda: any(r[4] == "ok" for r in _rows(watch, MEASUREMENTS))
                 and _rows(watch, MEASUREMENTS)[-1][4] == "running"
                 and _rows(watch, newest_records)[0][0] >= 2, 60, "a finished measurement and a window of the next")
        runner.send_signal(signal.SIGKILL)
        runner.wait(10)
    finally:
        if runner.poll() is None:
            runner.kill()
    wait_for(lambda: not processes_with(marker) and not processes_with(f"{probe} latency"), 10,
             "the load and the probe to end with the runner")

    before = _rows(watch, MEASUREMENTS)
    finished_before = {r[0] for r in before if r[4] == "ok"}
    assert finished_before and before[-1][4] == "running"
    engine = open_store(postgres_url)
    killed = load_run(engine, 1)
    assert killed.status == "running"
    partial = next(m for m in killed.measurements if m.status == "running")
    assert partial.meta is not None and partial.windows and partial.results == []

    r = run_cli("run", "--resume", "c.toml", "--store", postgres_url, cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    assert f"Resuming campaign killed (run 1): {4 - len(finished_before)} measurement(s)" in r.stderr

    run = load_run(engine, 1)
    assert run.status == "finished" and all(m.status == "ok" for m in run.measurements)
    assert Counter((m.load, m.repetition) for m in run.measurements) == {
        (load, rep): 1 for load in ("idle", "busy") for rep in range(2)}
    assert finished_before <= {m.id for m in run.measurements}
    after = _rows(watch, MEASUREMENTS)
    assert len(after) == 5 and [r[3] for r in after].count(2) == 1
    [cut] = [r for r in after if r[3] == 1 and r[4] != "ok"]
    assert cut[4] == "error" and [f.attempt for f in run.failed_attempts] == [1]
    assert _rows(watch, "select count(*) from runs") == [(1,)]
    assert _rows(watch, "select runner from runs") == [(None,)]
    watch.dispose()


@pytest.mark.functional
def test_two_runners_store_into_one_database_at_once(tmp_path, probe, postgres_url):
    """Started together on an empty database: one creates the schema while the other waits for it, then
    each stores its own run."""
    (tmp_path / "c.toml").write_text(latency_campaign("pair", None, repetitions=2, duration_s=0.3, interval_us=1000))
    env = cli_env(probe)
    runners = [start_cli("run", "c.toml", "--store", postgres_url, cwd=tmp_path, env=env) for _ in range(2)]
    try:
        outputs = [p.communicate(timeout=120) for p in runners]
    finally:
        for p in runners:
            if p.poll() is None:
                p.kill()
    for p, (out, err) in zip(runners, outputs):
        assert p.returncode == 0, err
    said = sorted(re.search(r"Run (\d+) of pair finished: 2 of 2 measurements ok\.", out).group(1)
                  for out, _ in outputs)
    assert said == ["1", "2"]

    engine = open_store(postgres_url, write=False)
    assert [(r["id"], r["status"], r["measurements"], r["ok"]) for r in list_runs(engine)] == [
        (2, "finished", 2, 2), (1, "finished", 2, 2)]
    for run_id in (1, 2):
        run = load_run(engine, run_id)
        assert sorted(m.repetition for m in run.measurements) == [0, 1]
        assert all(m.result("all")["count"] > 0 and m.windows for m in run.measurements)
        assert list(run.fingerprints) == ["native"]
    assert _rows(engine, "select count(*), count(distinct measurement_id) from records where type = 'end'") == [(4, 4)]
