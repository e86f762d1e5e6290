"""The probe's last read, the one with its `end` record, goes into the store with the measurement's
end: one transaction (one wait for the disk) fewer between two probe runs, and nothing lost."""

from __future__ import annotations

import pytest
from rich.console import Console

from host_helpers import wakeup_campaign
from rtvbench.campaign.reader import parse_campaign
from rtvbench.runner.run import Runner
from rtvbench.store import load_run, open_store
from rtvbench.store.writer import MeasurementRecorder, RunRecorder

pytestmark = pytest.mark.functional

CAMPAIGN = wakeup_campaign("commits", '[environments.here]\ntarget = "local"\n', duration_s=0.3, reps=2)


def test_the_end_record_is_committed_with_the_measurement_end(tmp_path, monkeypatch, probe):
    monkeypatch.setenv("RTVBENCH_PROBE", str(probe))
    committed_alone: list[str] = []
    add_records = MeasurementRecorder.add_records

    def noted(self, numbered):
        committed_alone.extend(record["type"] for _, record in numbered)
        return add_records(self, numbered)
    monkeypatch.setattr(MeasurementRecorder, "add_records", noted)
    engine = open_store(f"sqlite:///{tmp_path}/s.db")
    run = load_run(engine, Runner(parse_campaign(CAMPAIGN, "c.toml"), engine, Console(quiet=True)).run().run_id)
    assert [m.status for m in run.measurements] == ["ok", "ok"]
    assert "meta" in committed_alone and "end" not in committed_alone
    for m in run.measurements:
        assert m.meta is not None and m.results and m.end is not None and m.end["status"] == "ok"


def test_held_records_are_lost_only_with_an_unfinished_measurement(tmp_path):
    engine = open_store(f"sqlite:///{tmp_path}/s.db")
    recorder = RunRecorder.create(engine, parse_campaign(CAMPAIGN, "c.toml"))
    kept, dropped = (recorder.start_measurement(environment="here", load="idle", benchmark="wakeup",
                                                kind="latency", repetition=r, attempt=1, order_index=r,
                                                command=["p"], load_commands=[]) for r in (0, 1))
    for m in (kept, dropped):
        m.add_records([(1, {"type": "meta"})])
        m.hold_records([(2, {"type": "end", "status": "ok"})])
    kept.finish("ok", returncode=0)         # `dropped`: its runner died before the end
    with engine.connect() as conn:
        rows = conn.exec_driver_sql("SELECT measurement_id, seq, type FROM records ORDER BY measurement_id, seq").all()
    assert [tuple(r) for r in rows] == [(kept.id, 1, "meta"), (kept.id, 2, "end"), (dropped.id, 1, "meta")]
