"""A farm of three boards measured at once (`rtvbench run --jobs`): three sshd instances, each in a
network namespace of its own behind a veth pair (10.201.N.1 here, 10.201.N.2 the board). What ran
at the same time is read from the store's measurement timestamps, never from the test's clocks."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
from collections import Counter
from datetime import datetime

import pytest

from helpers.sshd import Sshd, available
from host_helpers import cli_env, run_cli, start_cli, wait_for
from rtvbench.store import load_run, open_store

BOARDS = (1, 2, 3)
REPS = 2
#: each measurement waits this long on its board: long against what a busy host adds around it
WAIT_S = 3


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed (apt-get install iproute2)"
    in_use = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True).stdout
    if any(f" 10.201.{n}." in in_use for n in BOARDS):
        return "10.201.1-3.0/24 are already in use on this machine"
    return available()


@pytest.fixture(scope="module")
def boards(tmp_path_factory):
    """The three boards' servers, board N at 10.201.N.2 in namespace rtvbfarmN-<pid>; all removed after."""
    why = _why_not()
    if why:
        pytest.skip(why)
    tag = os.getpid() % 100000
    servers: list[Sshd] = []
    spaces: list[str] = []
    try:
        for n in BOARDS:
            ns, here, there = f"rtvbfarm{n}-{tag}", f"rvf{n}h{tag}", f"rvf{n}b{tag}"
            _ip("netns", "add", ns)
            spaces.append(ns)
            _ip("link", "add", here, "type", "veth", "peer", "name", there)
            _ip("link", "set", there, "netns", ns)
            _ip("addr", "add", f"10.201.{n}.1/24", "dev", here)
            _ip("link", "set", here, "up")
            _ip("-n", ns, "addr", "add", f"10.201.{n}.2/24", "dev", there)
            _ip("-n", ns, "link", "set", there, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
            servers.append(Sshd(tmp_path_factory.mktemp(f"board{n}"), netns=ns, address=f"10.201.{n}.2").start())
        yield servers
    finally:
        for server in servers:
            server.stop()
        for ns in spaces:
            _ip("netns", "del", ns)         # with the namespace's end of the veth pair, and so the other


def _campaign(tmp_path, servers, name: str, second_login: bool = False) -> None:
    """Board N is environment bN, reached at its address (the ssh config names it so); with
    second_login also environment b1again, a second login of board 1 (the same machine)."""
    envs = []
    for n, server in zip(BOARDS, servers):
        server.write_client_config(tmp_path / f"b{n}.conf", alias=server.address)
        envs.append(f'[environments.b{n}]\ntarget = "ssh"\nhost = "{server.address}"\nssh_config = "b{n}.conf"\n')
    if second_login:
        envs.append(f'[environments.b1again]\ntarget = "ssh"\nhost = "{servers[0].user}@{servers[0].address}"\n'
                    'ssh_config = "b1.conf"\n')
    (tmp_path / "c.toml").write_text(
        f'name = "{name}"\nrepetitions = {REPS}\nseed = 3\n' + "\n".join(envs)
        + f'\n[benchmarks.wait]\nkind = "command"\ncommand = "sh -c \'sleep {WAIT_S}; echo waited {WAIT_S}\'"\n'
        f'format = "mapping"\nexpected_s = {WAIT_S}\n[[benchmarks.wait.figures]]\nname = "waited_s"\n'
        'regex = "waited ([0-9]+)"\n')


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


def test_three_boards_measure_at_once(boards, tmp_path, probe):
    _campaign(tmp_path, boards, "farm")
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


def test_one_machine_never_overlaps_and_a_killed_run_resumes(boards, tmp_path, probe):
    _campaign(tmp_path, boards, "farm-kill", second_login=True)
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
