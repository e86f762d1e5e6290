"""The store: migrations build exactly the declared schema, and readers see one row
per measurement even when --resume re-ran it."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import func, inspect, select

from rtvbench.campaign.reader import parse_campaign
from rtvbench.errors import StoreError
from rtvbench.store import RunRecorder, list_runs, load_run, open_store
from rtvbench.store.db import SCHEMA_HEAD
from rtvbench.store.schema import cpu_samples, metadata

pytestmark = pytest.mark.functional

TEXT = """
name = "store"
[environments.native]
target = "local"
[benchmarks.w]
kind = "latency"
duration_s = 1
"""


def test_migrations_match_the_schema_and_are_idempotent(store_url):
    engine = open_store(store_url)
    open_store(store_url)                           # second open: nothing to do, no error
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
        version = conn.exec_driver_sql("select version_num from alembic_version").scalar()
        tables = {t: {c["name"]: c for c in inspect(conn).get_columns(t)} for t in inspect(conn).get_table_names()}
        journal = conn.exec_driver_sql("pragma journal_mode").scalar() if engine.dialect.name == "sqlite" else None
        synchronous = conn.exec_driver_sql("pragma synchronous").scalar() if engine.dialect.name == "sqlite" else None
    assert diff == []
    assert version == SCHEMA_HEAD == "0009"
    # compare_metadata is silent about what it cannot compare; the names and nullability it can.
    assert set(tables) == set(metadata.tables) | {"alembic_version"}
    for name, table in metadata.tables.items():
        assert {c: col["nullable"] for c, col in tables[name].items()} == {
            c.name: c.nullable for c in table.columns}, name
    assert journal == ("wal" if engine.dialect.name == "sqlite" else None)
    # NORMAL (1): the WAL reaches the disk at checkpoints, not at every commit (docs/architecture.md, "Store").
    assert synchronous == (1 if engine.dialect.name == "sqlite" else None)


def test_default_store_is_created_in_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    open_store(None)
    assert (tmp_path / "rtvbench-results" / "rtvbench.db").is_file()


def test_latest_attempt_wins_and_records_keep_their_order(store_url):
    engine = open_store(store_url)
    run = RunRecorder.create(engine, parse_campaign(TEXT))
    common = dict(environment="native", load="idle", benchmark="w", kind="latency", command=["p"],
                  load_commands=[])
    first = run.start_measurement(repetition=0, attempt=1, order_index=0, **common)
    first.add_record(1, {"type": "meta", "schema": 1})
    first.add_record(2, {"type": "window", "cpu": 0, "index": 0})   # then the runner died
    other = run.start_measurement(repetition=1, attempt=1, order_index=1, **common)
    other.add_record(1, {"type": "meta", "schema": 1})
    other.add_record(2, {"type": "result", "cpu": "all", "max_ns": 7})
    other.finish("ok", 0)
    again = run.start_measurement(repetition=0, attempt=2, order_index=0, **common)
    for seq, rec in enumerate([{"type": "meta", "schema": 1}, {"type": "warning", "code": "x"},
                               {"type": "window", "index": 0}, {"type": "window", "index": 1}], start=1):
        again.add_record(seq, rec)
    # The result and end read at one moment, in one transaction.
    again.add_records([(5, {"type": "result", "cpu": "all", "max_ns": 9}), (6, {"type": "end", "status": "ok"})])
    again.finish("ok", 0)
    run.set_status("finished")

    loaded = load_run(engine, run.id)
    assert [(m.repetition, m.status, m.id) for m in loaded.measurements] == [
        (0, "ok", again.id), (1, "ok", other.id)]
    m = loaded.measurements[0]
    assert [w["index"] for w in m.windows] == [0, 1]
    assert m.result("all")["max_ns"] == 9 and m.meta["schema"] == 1 and len(m.warnings) == 1
    assert m.end == {"type": "end", "status": "ok"}
    assert loaded.status == "finished" and loaded.finished_at.tzinfo is not None
    assert run.attempts() == {("native", "idle", "w", 0): (2, "ok"), ("native", "idle", "w", 1): (1, "ok")}
    [row] = list_runs(engine)
    assert (row["measurements"], row["ok"], row["status"]) == (2, 2, "finished")


def _read_only(directory: Path, *argv: str) -> subprocess.CompletedProcess:
    """`rtvbench ARGV` with `directory` mounted read-only (a bind mount in a mount namespace of
    its own: the test runs as root, for whom file modes do not make a file read-only)."""
    script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'
    return subprocess.run(["unshare", "--mount", "sh", "-c", script, str(directory),
                           str(Path(sys.executable).parent / "rtvbench"), *argv],
                          capture_output=True, text=True, timeout=120)


def _can_mount_read_only(tmp_path: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "--mount", "sh", "-c", 'mount --bind "$0" "$0" && mount -o remount,bind,ro '
                            '"$0" && ! touch "$0/x" 2>/dev/null', str(tmp_path)], capture_output=True)
    return probe.returncode == 0


def test_a_store_on_a_read_only_file_system_lists_shows_and_reports(tmp_path):
    if not _can_mount_read_only(tmp_path):
        pytest.skip("this machine cannot make a read-only mount (needs unshare and CAP_SYS_ADMIN)")
    store = tmp_path / "store"
    store.mkdir()
    url = f"sqlite:///{store}/s.db"
    engine = open_store(url)
    run = RunRecorder.create(engine, parse_campaign(TEXT))
    m = run.start_measurement(environment="native", load="idle", benchmark="w", kind="latency", command=["p"],
                              load_commands=[], repetition=0, attempt=1, order_index=0)
    for seq, rec in enumerate([{"type": "meta", "schema": 1, "subcommand": "latency", "params": {}},
                               {"type": "result", "cpu": "all", "count": 10, "missed": 0, "min_ns": 1000,
                                "avg_ns": 2000, "max_ns": 9000},
                               {"type": "end", "status": "ok"}], start=1):
        m.add_record(seq, rec)
    m.finish("ok", 0)
    run.set_status("finished")
    engine.dispose()
    before = sorted(p.name for p in store.iterdir())

    listed = _read_only(store, "list", "--store", url)
    assert listed.returncode == 0, listed.stderr
    assert "store" in listed.stdout and "finished" in listed.stdout, listed.stdout
    shown = _read_only(store, "show", "1", "--store", url)
    assert shown.returncode == 0 and "w" in shown.stdout, shown.stderr
    out = tmp_path / "r.json"
    reported = _read_only(store, "report", "--campaign", "1", "--store", url, "--format", "json", "-o", str(out))
    assert reported.returncode in (0, 1), reported.stderr      # 1: a requirement failed, not here
    assert json.loads(out.read_text())["measurements"][0]["benchmark"] == "w"
    assert sorted(p.name for p in store.iterdir()) == before


def test_a_read_only_store_behind_the_schema_says_so(tmp_path):
    if not _can_mount_read_only(tmp_path):
        pytest.skip("this machine cannot make a read-only mount (needs unshare and CAP_SYS_ADMIN)")
    store = tmp_path / "store"
    store.mkdir()
    with sqlite3.connect(store / "old.db") as conn:
        conn.executescript((Path(__file__).parent / "fixtures" / "store-0003.sql").read_text(encoding="utf-8"))
    listed = _read_only(store, "list", "--store", f"sqlite:///{store}/old.db")
    assert listed.returncode == StoreError.exit_code, listed.stderr
    assert f"is read-only and its schema is at revision 0003, not {SCHEMA_HEAD}" in listed.stderr
    assert "Traceback" not in listed.stderr


def test_a_store_from_a_newer_rtvbench_is_named_as_such(store_url):
    engine = open_store(store_url)
    with engine.begin() as conn:
        conn.exec_driver_sql("update alembic_version set version_num = '0099'")
    engine.dispose()
    with pytest.raises(StoreError, match="has schema revision 0099, which this rtvbench does not know"):
        open_store(store_url)


def test_json_reads_back_as_it_was_written(store_url):
    """Key order is what the report shows fingerprints and campaigns in; a probe may print any string."""
    engine = open_store(store_url)
    c = parse_campaign('name = "order"\n[environments.zeta]\ntarget = "local"\n[environments.alpha]\n'
                       'target = "local"\n[benchmarks.w]\nkind = "latency"\nloops = 10\n')
    run = RunRecorder.create(engine, c)
    sysinfo = {"hostname": "h", "kernel": "6.1", "cpus": 4, "cmdline": "a\x00b", "aa": {"z": 1, "a": 2}}
    run.add_fingerprint("zeta", {"type": "local", "arch": "x86_64"}, sysinfo, {"type": "meta", "schema": 1})
    m = run.start_measurement(environment="zeta", load="idle", benchmark="w", kind="latency", command=["p"],
                              load_commands=[], repetition=0, attempt=1, order_index=0)
    m.add_record(1, {"type": "result", "cpu": "all", "max_ns": 9, "count": 3, "avg_ns": 5})
    m.finish("ok", 0)

    loaded = load_run(engine, run.id)
    assert list(loaded.campaign) == ["name", "environments", "benchmarks"]
    assert list(loaded.campaign["environments"]) == ["zeta", "alpha"]
    assert list(loaded.fingerprints["zeta"].items()) == list(sysinfo.items())
    assert list(loaded.targets["zeta"]) == ["type", "arch"]
    assert list(loaded.measurements[0].results[0]) == ["type", "cpu", "max_ns", "count", "avg_ns"]


def test_two_commands_started_together_on_a_new_store_both_open_it(store_url, tmp_path):
    """Both would create the tables; the one that comes second must wait for the first and find them."""
    from host_helpers import cli_env, start_cli

    both = [start_cli("list", "--store", store_url, cwd=tmp_path, env=cli_env()) for _ in range(2)]
    for p in both:
        out, err = p.communicate(timeout=60)
        assert (p.returncode, out.strip()) == (0, "The store holds no runs yet; start one with `rtvbench run`."), err
    with open_store(store_url).connect() as conn:
        assert conn.exec_driver_sql("select count(*) from alembic_version").scalar() == 1


def test_held_samples_go_in_with_the_next_lines_or_the_end(store_url):
    engine = open_store(store_url)
    run = RunRecorder.create(engine, parse_campaign(TEXT))
    common = dict(environment="native", load="idle", benchmark="w", kind="latency", command=["p"],
                  load_commands=[], attempt=1)

    def stored(m) -> list[str]:
        with engine.connect() as conn:
            return sorted(conn.scalars(select(cpu_samples.c.phase).where(cpu_samples.c.measurement_id == m.id)))

    lines = run.start_measurement(repetition=0, order_index=0, **common)
    lines.hold_cpu_samples("native", {"before": {"cpu": {"user": 1}}, "loadavg_before": {"1m": 0.5}})
    assert stored(lines) == []                      # nothing committed yet
    lines.add_records([(1, {"type": "meta", "schema": 1})])
    assert stored(lines) == ["before", "loadavg_before"]
    lines.hold_cpu_samples("native", {"after": {"cpu": {"user": 2}}})
    lines.finish("ok", 0)
    assert stored(lines) == ["after", "before", "loadavg_before"]
    # A probe that printed nothing: the samples go in with the measurement's end.
    silent = run.start_measurement(repetition=1, order_index=1, **common)
    silent.hold_cpu_samples("native", {"before": {"cpu": {"user": 1}}})
    silent.finish("error", 127, error="cannot start p")
    assert stored(silent) == ["before"]
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(cpu_samples)) == 4      # none twice
    assert load_run(engine, run.id).measurements[0].cpu_stat["before"] == {"cpu": {"user": 1}}
