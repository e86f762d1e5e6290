"""The store on PostgreSQL (a throwaway server of the tests' own, tests/postgres_server.py): the URLs and
the driver, then real campaigns, a runner killed and resumed, and two runners storing at once.
The store's own tests run on PostgreSQL too (the `store_url` fixture)."""

from __future__ import annotations

import json
import socket
import sys

import pytest

from host_helpers import cli_env, latency_campaign, run_cli
from rtvbench.cli import main
from rtvbench.errors import StoreError
from rtvbench.store import load_run, open_store
from rtvbench.store.db import SCHEMA_HEAD


def test_without_the_driver_a_postgresql_url_names_the_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "psycopg", None)          # as if it were not installed
    with pytest.raises(SystemExit) as exc:
        main(["list", "--store", "postgresql://ci:secret@db.example/results"])
    assert exc.value.code == StoreError.exit_code
    assert capsys.readouterr().err.strip() == (
        "rtvbench: --store postgresql+psycopg://ci:***@db.example/results: the PostgreSQL driver psycopg is "
        "not installed; install it with `pip install 'rtvbench[postgres]'`.")


def test_a_plain_postgresql_url_is_psycopg(postgres_server):
    url = postgres_server.url(postgres_server.create_database(), driver="postgresql")
    engine = open_store(url)
    assert engine.dialect.driver == "psycopg"
    with engine.connect() as conn:
        assert conn.exec_driver_sql("select version_num from alembic_version").scalar() == SCHEMA_HEAD


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

