"""A campaign over three labgrid places takes them all before it reaches any board, or none: a real
coordinator and exporter on 127.0.0.1 (tests/helpers/labgrid_lab.py), three places whose boards
are private sshds, and `rtvbench run` through the CLI; another labgrid user is `labgrid-client`
run as LG_USERNAME=alice."""

from __future__ import annotations

import getpass
import itertools
import os
import signal
import socket
import sqlite3
import subprocess
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

from helpers.labgrid_lab import Lab, ssh_board
from helpers.sshd import Sshd
from helpers.stored_so_far import stored_records
from host_helpers import cli_argv, cli_env, run_cli, wait_for, wakeup_campaign
from rtvbench.store import load_run, open_store

pytestmark = [pytest.mark.ssh, pytest.mark.functional, pytest.mark.timeout(300)]     # a hang guard
_RUNS = itertools.count(1)
ME = f"{socket.gethostname()}/{getpass.getuser()}"
ALICE = f"{socket.gethostname()}/alice"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("farm")
    boards = [Sshd(root / f"board{i}").start() for i in range(3)]
    lab = Lab(root, "".join(ssh_board(f"b{i}", b.port, getpass.getuser()) for i, b in enumerate(boards)))
    lab.boards = boards
    for board in boards:
        # ssh verifies each board's key and logs in with the test's key, at the address its place gives.
        board.write_client_config(board.root / "lg_ssh_config", alias="127.0.0.1")
    try:
        yield lab.start()
    finally:
        lab.stop()
        for board in boards:
            board.stop()


@pytest.fixture
def places(lab):
    """Three new places (a place is never reused between tests), one per board; the boards' logs
    emptied, so that a login in them is this test's."""
    run = next(_RUNS)
    names = [f"farm{run}-p{i}" for i in range(3)]
    for i, name in enumerate(names):
        lab.add_place(name, f"b{i}")
    for board in lab.boards:
        board.log.write_bytes(b"")
    yield names
    for name, holder in zip(names, lab.holders(names)):
        if holder:
            lab.client("-p", name, "release", "--kick", check=False)


def campaign(lab: Lab, places: list[str], duration_s: float) -> str:
    envs = "".join(f'''
[environments.e{i}]
target = "labgrid"
place = "{place}"
coordinator = "{lab.address}"
ssh_config = "{board.root / 'lg_ssh_config'}"
''' for i, (place, board) in enumerate(zip(places, lab.boards)))
    return wakeup_campaign("farm", envs, duration_s, 1)


def logins(lab: Lab) -> list[int]:
    """How many ssh logins each board has seen since the test began."""
    return [board.log.read_text(errors="replace").count("Accepted publickey") for board in lab.boards]


@contextmanager
def running(tmp_path: Path, probe, *options: str):
    """`rtvbench run c.toml` in the background, its stderr in tmp_path/err to be watched as it runs;
    killed if the test leaves it running."""
    proc = subprocess.Popen(cli_argv("run", "c.toml", "--store", "sqlite:///s.db", *options), cwd=tmp_path,
                            env=cli_env(probe), stdin=subprocess.DEVNULL, stdout=open(tmp_path / "out", "w"),
                            stderr=open(tmp_path / "err", "w"), start_new_session=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def ended(proc: subprocess.Popen) -> int:
    return proc.wait(120)               # a hang guard


def waiting_said(tmp_path: Path) -> list[str]:
    return [x for x in (tmp_path / "err").read_text().splitlines() if "waiting up to" in x]


def stored_runs(db: Path) -> int:
    if not db.exists():
        return 0
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as con:
        try:
            return con.execute("select count(*) from runs").fetchone()[0]
        except sqlite3.OperationalError:
            return 0


def test_a_run_waits_for_a_busy_place_holding_the_others_reserved_and_reaches_no_board_before_all_are_its(
        lab, places, tmp_path, probe):
    p0, p1, p2 = places
    lab.client("-p", p1, "acquire", user="alice")
    (tmp_path / "c.toml").write_text(campaign(lab, places, 0.3))
    with running(tmp_path, probe, "--reserve-timeout", "120") as proc:
        [said] = wait_for(lambda: waiting_said(tmp_path), 60, "the run to say it waits")
        assert f"labgrid place {p1} is acquired by {ALICE}: waiting up to 120 s" in said, said
        assert "the 2 other place(s) of the run are reserved meanwhile" in said, said
        mine = {r["filters"]: r for r in lab.reservations() if r["owner"] == ME}
        assert {f: r["state"] for f, r in mine.items()} == \
            {f"name={p0}": "allocated", f"name={p1}": "waiting", f"name={p2}": "allocated"}, mine
        assert lab.holders(places) == [None, ALICE, None]
        assert logins(lab) == [0, 0, 0]             # no board reached while one place is missing
        # Reserved for the run, so nobody else takes a free place from under it meanwhile.
        taken = lab.client("-p", p0, "acquire", user="bob", check=False)
        assert taken.returncode != 0 and "was not reserved for" in taken.stderr, taken.stderr
        lab.client("-p", p1, "release", user="alice")
        assert ended(proc) == 0, (tmp_path / "err").read_text() + lab.logs()
    assert len(waiting_said(tmp_path)) == 1         # said once, not at every poll
    assert all(n >= 1 for n in logins(lab)), logins(lab)
    assert lab.holders(places) == [None, None, None]      # all released at the end
    assert [r for r in lab.reservations() if r["owner"] == ME] == []
    run = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), 1)
    assert sorted(run.targets[f"e{i}"]["place"] for i in range(3)) == sorted(places)
    assert len(run.measurements) == 3 and all(m.status == "ok" for m in run.measurements)


def test_a_place_still_busy_after_the_timeout_fails_the_run_before_anything_is_acquired_or_measured(
        lab, places, tmp_path, probe):
    p0, p1, p2 = places
    lab.client("-p", p2, "acquire", user="alice")
    (tmp_path / "c.toml").write_text(campaign(lab, places, 0.3))
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", "--reserve-timeout", "2s", cwd=tmp_path,
                env=cli_env(probe), timeout=120)
    assert r.returncode == 3, r.stderr
    [line] = [x for x in r.stderr.splitlines() if x.startswith("rtvbench:") and "waiting up to" not in x]
    assert line.startswith(f"rtvbench: labgrid place {p2} is acquired by {ALICE} and was not free within "
                           "--reserve-timeout (2 s), so nothing was acquired or measured"), line
    assert f"labgrid-client -p {p2} who" in line and "environment e2" in line, line
    assert lab.holders(places) == [None, None, ALICE]
    assert [r for r in lab.reservations() if r["owner"] == ME] == []
    assert logins(lab) == [0, 0, 0]
    assert stored_runs(tmp_path / "s.db") == 0
    lab.client("-p", p2, "release", user="alice")


@pytest.mark.parametrize("when", ["waiting", "measuring"])
def test_sigterm_while_waiting_or_measuring_releases_every_place_and_reservation(
        lab, places, tmp_path, probe, when):
    if when == "waiting":
        lab.client("-p", places[1], "acquire", user="alice")
    # Whatever the machine's load, the signal finds the run where it is meant to: it would wait,
    # or measure, for ten minutes.
    (tmp_path / "c.toml").write_text(campaign(lab, places, 600))
    with running(tmp_path, probe, "--reserve-timeout", "600") as proc:
        if when == "waiting":
            wait_for(lambda: waiting_said(tmp_path), 60, "the run to say it waits")
        else:
            wait_for(lambda: stored_records(tmp_path / "s.db", "window"), 120, "a window of the first measurement")
            assert lab.holders(places) == [ME, ME, ME]
        proc.send_signal(signal.SIGTERM)
        assert ended(proc) == 130, (tmp_path / "err").read_text()
    assert "Traceback" not in (tmp_path / "err").read_text()
    assert lab.holders(places) == ([None, ALICE, None] if when == "waiting" else [None] * 3)
    assert [r for r in lab.reservations() if r["owner"] == ME] == []
    if when == "waiting":
        lab.client("-p", places[1], "release", user="alice")


def test_after_sigkill_midway_the_next_run_says_at_once_which_place_is_still_yours_and_how_to_release_it(
        lab, places, tmp_path, probe):
    # Killed in its first measurement; the probes end on the boards by themselves a few seconds later.
    (tmp_path / "c.toml").write_text(campaign(lab, places, 5))
    with running(tmp_path, probe) as proc:
        wait_for(lambda: stored_records(tmp_path / "s.db", "window"), 120, "a window of the first measurement")
        os.killpg(proc.pid, signal.SIGKILL)     # the runner and its probe, as a killed session would go
        proc.wait(60)
    # labgrid keeps a place acquired until someone releases it; the reservations went with the acquiring.
    assert lab.holders(places) == [ME, ME, ME]
    assert [r for r in lab.reservations() if r["owner"] == ME] == []
    r = run_cli("run", "c.toml", "--store", "sqlite:///s2.db", cwd=tmp_path, env=cli_env(probe), timeout=120)
    assert r.returncode == 3, r.stderr
    assert "waiting up to" not in r.stderr          # nothing to wait for: it would never come free
    first = sorted(places)[0]
    assert (f"rtvbench: labgrid place {first} is already acquired by you ({ME}), by another rtvbench run "
            f"or by hand: release it with `labgrid-client -x {lab.address} -p {first} release`") in r.stderr, r.stderr


def test_after_sigkill_while_waiting_its_reservations_are_left_to_expire_and_the_next_run_says_whose_they_are(
        lab, places, tmp_path, probe):
    p0, p1, _ = places
    lab.client("-p", p1, "acquire", user="alice")
    (tmp_path / "c.toml").write_text(campaign(lab, places, 0.3))
    with running(tmp_path, probe, "--reserve-timeout", "600") as proc:
        wait_for(lambda: waiting_said(tmp_path), 60, "the run to say it waits")
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(60)
    # Nothing acquired; the killed run's reservations stay until the coordinator drops them unpolled.
    assert lab.holders(places) == [None, ALICE, None]
    left = [r for r in lab.reservations() if r["owner"] == ME]
    assert len(left) == 3 and all(r["state"] in ("waiting", "allocated") for r in left), left
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", "--reserve-timeout", "1s", cwd=tmp_path,
                env=cli_env(probe), timeout=120)
    assert r.returncode == 3, r.stderr
    assert (f"labgrid place {p0} is reserved for you ({ME}) by another rtvbench run, or by a killed one whose "
            "reservation the coordinator drops a minute after it was last polled and was not free within "
            "--reserve-timeout (1 s)") in r.stderr, r.stderr
    assert logins(lab) == [0, 0, 0] and stored_runs(tmp_path / "s.db") == 0
    for res in left:
        lab.client("cancel-reservation", res["token"])
    lab.client("-p", p1, "release", user="alice")
