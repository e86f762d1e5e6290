"""A farm of three boards measured at once (`rtvbench run --jobs`): three sshd instances, each in a
network namespace of its own (tests/helpers/farm.py). What ran at the same time is read from the
store's measurement timestamps, never from the test's clocks."""

from __future__ import annotations

import signal
import sqlite3
from collections import Counter
from datetime import datetime

from helpers.farm import boards_fixture, write_campaign
from host_helpers import cli_env, run_cli, start_cli, wait_for
from rtvbench.store import load_run, open_store

REPS = 2
#: each timed measurement waits this long on its board: long against what a busy host adds around it
#: (about 2 s a measurement with three boards at once on a loaded 2-core machine, 1 s one at a time)
WAIT_S = 4
#: where nothing is timed, a shorter wait
SHORT_WAIT_S = 2

sshd_boards = boards_fixture()


def _campaign(tmp_path, servers, name: str, wait_s: int, second_login: bool = False) -> None:
    write_campaign(tmp_path, servers, name, REPS, wait_s, second_login)


def _spans(run) -> dict[str, list[tuple[datetime, datetime]]]:
    """environment -> (start, end) of each of its measurements that ended ok."""
    out: dict[str, list] = {}
    for m in run.measurements:
        if m.status == "ok":
            out.setdefault(m.environment, []).append((m.started_at, m.finished_at))
    return out


def _overlap(a: list, b: list) -> bool:
    return any(s1 < e2 and s2 < e1 for s1, e1 in a for s2, e2 in b)


def _seconds(spans) -> float:
    return sum((end - start).total_seconds() for start, end in spans)


def test_three_boards_measure_at_once(sshd_boards, tmp_path, probe):
    _campaign(tmp_path, sshd_boards, "farm", WAIT_S)
    env = cli_env(probe)
    engine = open_store(f"sqlite:///{tmp_path}/s.db")
    walls, shares = [], []
    for run_id, jobs in ((1, "3"), (2, "1")):
        r = run_cli("run", "c.toml", "--jobs", jobs, "--store", "sqlite:///s.db", cwd=tmp_path, env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        assert f"Run {run_id} of farm finished: 6 of 6 measurements ok." in r.stdout
        if jobs == "3":
            assert "6 measurement(s) in 3 lanes, 3 at once" in r.stderr
        spans = _spans(load_run(engine, run_id))
        assert sorted(spans) == ["b1", "b2", "b3"] and all(len(s) == REPS for s in spans.values())
        every = [span for s in spans.values() for span in s]
        walls.append((max(e for _, e in every) - min(s for s, _ in every)).total_seconds())
        shares.append(max(_seconds(s) for s in spans.values()))
    concurrent, sequential = walls
    # Side by side, the run takes the slowest board's time; one at a time, the sum of all three.
    assert concurrent <= 1.3 * shares[0], (walls, shares)
    assert sequential >= 2 * concurrent, (walls, shares)


def test_one_machine_never_overlaps_and_a_killed_run_resumes(sshd_boards, tmp_path, probe):
    _campaign(tmp_path, sshd_boards, "farm-kill", SHORT_WAIT_S, second_login=True)
    env = cli_env(probe)
    db = tmp_path / "s.db"

    def rows() -> list[tuple]:
        try:
            with sqlite3.connect(db) as conn:
                return conn.execute("select id, environment, repetition, attempt, status from measurements "
                                    "order by id").fetchall()
        except sqlite3.OperationalError:            # not created yet
            return []

    def records(ids) -> list[tuple]:
        with sqlite3.connect(db) as conn:
            return conn.execute(f"select measurement_id, seq, data from records where measurement_id in "
                                f"({','.join(map(str, ids))}) order by measurement_id, seq").fetchall()
    runner = start_cli("run", "c.toml", "--jobs", "4", "--store", "sqlite:///s.db", cwd=tmp_path, env=env)
    try:
        # Killed while lanes measure, after at least three measurements finished.
        wait_for(lambda: sum(r[4] == "ok" for r in rows()) >= 3 and any(r[4] == "running" for r in rows()),
                 90, "three finished measurements and one running")
        runner.send_signal(signal.SIGKILL)
        runner.wait(10)
    finally:
        if runner.poll() is None:
            runner.kill()
    before = rows()
    kept = {r[0]: r for r in before if r[4] == "ok"}
    in_flight = {(r[1], r[2]) for r in before if r[4] == "running"}
    assert kept and in_flight
    kept_records = records(kept)

    r = run_cli("run", "--resume", "c.toml", "--jobs", "4", "--store", "sqlite:///s.db", cwd=tmp_path, env=env,
                timeout=120)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    engine = open_store(f"sqlite:///{db}")
    run = load_run(engine, 1)
    assert run.status == "finished"
    envs = ("b1", "b2", "b3", "b1again")
    # Every planned measurement exactly once, all ok; what finished before the kill kept as it was.
    assert Counter((m.environment, m.repetition) for m in run.measurements) == {
        (e, rep): 1 for e in envs for rep in range(REPS)}
    assert all(m.status == "ok" for m in run.measurements)
    after = {row[0]: row for row in rows()}
    assert all(after[i] == row for i, row in kept.items())
    assert set(kept) <= {m.id for m in run.measurements} and records(kept) == kept_records
    # What the kill cut short was measured again, as a second attempt.
    again = {(m.environment, m.repetition): m.attempt for m in run.measurements}
    assert all(again[cell] == 2 for cell in in_flight)
    assert [f.status for f in run.failed_attempts] == ["error"] * len(in_flight)

    spans = _spans(run)
    # Two logins of board 1 are one machine: never at once. Distinct boards were.
    assert not _overlap(spans["b1"], spans["b1again"])
    assert _overlap(spans["b1"] + spans["b1again"], spans["b2"])
    assert _overlap(spans["b2"], spans["b3"])
