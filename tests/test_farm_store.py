"""The lanes of a run (`rtvbench run --jobs`) write into one store from threads of their own, each
while loads' reader threads and the heartbeat write too: every row arrives, on SQLite without
"database is locked" and on PostgreSQL alike."""

from __future__ import annotations

import threading

import pytest

from rtvbench.campaign.reader import parse_campaign
from rtvbench.store import RunRecorder, load_run, open_store

pytestmark = pytest.mark.functional

LANES, MEASUREMENTS, LINES = 6, 4, 40
TEXT = ('name = "farm-store"\n' + "".join(f'[environments.b{i}]\ntarget = "ssh"\nhost = "b{i}"\n'
                                         for i in range(LANES))
        + '[benchmarks.w]\nkind = "latency"\nduration_s = 1\n')


def test_lanes_write_at_once_and_lose_nothing(store_url):
    engine = open_store(store_url)
    run = RunRecorder.create(engine, parse_campaign(TEXT))
    failures: list[BaseException] = []
    start = threading.Barrier(LANES + 1)

    def lane(i: int) -> None:
        try:
            start.wait()
            for rep in range(MEASUREMENTS):
                m = run.start_measurement(environment=f"b{i}", load="idle", benchmark="w", kind="latency",
                                          repetition=rep, attempt=1, order_index=rep * LANES + i, command=["p"],
                                          load_commands=[])
                m.add_record(1, {"type": "meta", "schema": 1})
                for seq in range(2, LINES):
                    m.add_load_record("idle", seq, {"type": "window", "index": seq})     # a load's reader
                    m.add_records([(seq, {"type": "window", "cpu": 0, "index": seq})])
                m.hold_cpu_samples(f"b{i}", {"after": {"cpu": {"user": rep}}})
                m.add_records([(LINES, {"type": "result", "cpu": "all", "max_ns": i}),
                               (LINES + 1, {"type": "end", "status": "ok"})])
                m.finish("ok", 0)
                run.beat()
        except BaseException as e:       # noqa: BLE001 - reported by the test below
            failures.append(e)
    threads = [threading.Thread(target=lane, args=(i,)) for i in range(LANES)]
    for t in threads:
        t.start()
    start.wait()
    for t in threads:
        t.join(120)
    assert not failures, failures
    run.set_status("finished")
    stored = load_run(engine, run.id)
    assert len(stored.measurements) == LANES * MEASUREMENTS
    assert all(m.status == "ok" for m in stored.measurements)
    # In the plan's order, whichever lane stored its rows first.
    assert [(m.environment, m.repetition) for m in stored.measurements] == [
        (f"b{i}", rep) for rep in range(MEASUREMENTS) for i in range(LANES)]
    for m in stored.measurements:
        assert len(m.windows) == LINES - 2 and m.results == [{"type": "result", "cpu": "all",
                                                              "max_ns": int(m.environment[1:])}]
