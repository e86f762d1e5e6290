"""The store: migrations build exactly the declared schema, and readers see one row
per measurement even when --resume re-ran it."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from rtvbench.campaign import parse_campaign
from rtvbench.store import RunRecorder, list_runs, load_run, open_store
from rtvbench.store.schema import metadata

TEXT = """
name = "store"
[environments.native]
target = "local"
[benchmarks.w]
kind = "latency"
duration_s = 1
"""


def test_migrations_match_the_schema_and_are_idempotent(tmp_path):
    url = f"sqlite:///{tmp_path}/s.db"
    engine = open_store(url)
    open_store(url)                                 # second open: nothing to do, no error
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
        version = conn.exec_driver_sql("select version_num from alembic_version").scalar()
        journal = conn.exec_driver_sql("pragma journal_mode").scalar()
    assert diff == []
    assert version == "0005"
    assert journal == "wal"


def test_default_store_is_created_in_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    open_store(None)
    assert (tmp_path / "rtvbench-results" / "rtvbench.db").is_file()


def test_latest_attempt_wins_and_records_keep_their_order(tmp_path):
    engine = open_store(f"sqlite:///{tmp_path}/s.db")
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
                               {"type": "window", "index": 0}, {"type": "window", "index": 1},
                               {"type": "result", "cpu": "all", "max_ns": 9},
                               {"type": "end", "status": "ok"}], start=1):
        again.add_record(seq, rec)
    again.finish("ok", 0)
    run.set_status("finished")

    loaded = load_run(engine, run.id)
    assert [(m.repetition, m.status, m.id) for m in loaded.measurements] == [
        (0, "ok", again.id), (1, "ok", other.id)]
    m = loaded.measurements[0]
    assert [w["index"] for w in m.windows] == [0, 1]
    assert m.result("all")["max_ns"] == 9 and m.meta["schema"] == 1 and len(m.warnings) == 1
    assert loaded.status == "finished" and loaded.finished_at.tzinfo is not None
    assert run.attempts() == {("native", "idle", "w", 0): (2, "ok"), ("native", "idle", "w", 1): (1, "ok")}
    [row] = list_runs(engine)
    assert (row["measurements"], row["ok"], row["status"]) == (2, 2, "finished")
