"""The labgrid target end to end: a real labgrid coordinator and exporter on 127.0.0.1
(tests/helpers/labgrid_lab.py), a place whose board is a private sshd switched by a `rest`
power port, and `rtvbench run` on it through the CLI."""

from __future__ import annotations

import getpass
import itertools
import signal
import socket
import threading
import time

import pytest

from helpers.labgrid_lab import Lab, PowerSwitch
from helpers.sshd import Sshd
from host_helpers import cli_env, processes_with, run_cli, start_cli, wait_for, wakeup_campaign
from rtvbench.store import load_run, open_store

pytestmark = pytest.mark.ssh
_PLACES = itertools.count(1)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("lab")
    board = Sshd(root / "board").start()
    board.stop()                        # a board starts switched off
    power = PowerSwitch(board)
    lab = Lab(root, board, power)
    lab.board, lab.power = board, power
    # ssh verifies the board's key and logs in with the test's own key, as for the ssh target.
    board.write_client_config(root / "ssh_config", alias="127.0.0.1")
    try:
        yield lab.start()
    finally:
        lab.stop()
        power.close()
        board.stop()


@pytest.fixture
def place(lab):
    name = f"rtvb-place-{next(_PLACES)}"      # one per test: a place is never reused
    lab.add_place(name)
    lab.power.set(False)
    lab.power.dead = False
    lab.power.log.clear()
    yield name
    lab.power.set(False)


def campaign(place: str, lab: Lab, duration_s: float, reps: int, extra: str = "") -> str:
    return wakeup_campaign("lab", f'''
[environments.board]
target = "labgrid"
place = "{place}"
ssh_config = "{lab.root / 'ssh_config'}"
power_off_s = 0.2
boot_timeout_s = 20
{extra}''', duration_s, reps)


def test_a_campaign_on_a_labgrid_place_powers_measures_recovers_and_releases(lab, place, tmp_path, probe):
    """The coordinator comes from LG_COORDINATOR. The place is held during the run and free after;
    the board, off at first, is switched on; when it stops answering midway (its sshd killed,
    power still on) it is power-cycled and the lost measurement is measured again."""
    (tmp_path / "c.toml").write_text(campaign(place, lab, 1.0, 2))
    holders: set[str | None] = set()
    hung: list[float] = []

    def watch() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not hung:
            holders.add(lab.holder(place))
            if any("latency" in cmd for cmd in lab.board.probe_commands()):
                time.sleep(0.4)
                lab.board.stop()        # the board hangs: no answer, no connection
                hung.append(time.monotonic())
            time.sleep(0.1)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    started = time.monotonic()
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path,
                env=cli_env(probe, LG_COORDINATOR=lab.address), timeout=120)
    took = time.monotonic() - started
    watcher.join(5)
    assert r.returncode == 0, r.stderr + lab.logs()
    assert hung, "the latency probe was never seen running on the board"
    assert "Run 1 of lab finished: 2 of 2 measurements ok." in r.stdout
    assert "power-cycling it" in r.stderr

    me = f"{socket.gethostname()}/{getpass.getuser()}"
    assert me in holders, holders           # acquired while it ran ...
    assert lab.holder(place) is None        # ... and released at the end
    assert lab.power.log == ["on", "off", "on"], lab.power.log

    run = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), 1)
    assert run.targets["board"]["target"] == "labgrid"
    assert run.targets["board"]["place"] == place and run.targets["board"]["power"] is True
    for m in run.measurements:
        assert m.status == "ok", m.error
        seen = m.result("all")["count"] + m.result("all")["missed"]
        assert abs(seen - 1000) <= 50, seen        # 1 s at 1 ms
    [failed] = run.failed_attempts
    assert failed.attempt == 1
    assert sorted(m.attempt for m in run.measurements) == [1, 2]
    assert processes_with(str(lab.root / "ssh_config")) == []     # no ssh connection left
    print(f"labgrid run with a power cycle took {took:.1f} s")


@pytest.mark.parametrize("sig, when", [(signal.SIGINT, "measuring"), (signal.SIGTERM, "booting")],
                         ids=["SIGINT-measuring", "SIGTERM-booting"])
def test_the_place_is_released_when_the_run_is_stopped(lab, place, tmp_path, probe, sig, when):
    """SIGINT during a measurement; SIGTERM while rtvbench waits for a board that does not boot
    (before any measurement, where the runner's own interrupt handling did not reach before)."""
    lab.power.dead = when == "booting"
    (tmp_path / "c.toml").write_text(campaign(place, lab, 30, 1, f'coordinator = "{lab.address}"\n'))
    proc = start_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=cli_env(probe))
    try:
        wait_for(lambda: lab.holder(place), 30, "the place to be acquired")
        if when == "measuring":
            wait_for(lambda: any("latency" in c for c in lab.board.probe_commands()), 30, "the measurement")
        else:
            wait_for(lambda: lab.power.log == ["on"], 30, "the board to be switched on")
            time.sleep(1)
        stopped = time.monotonic()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
        took = time.monotonic() - stopped
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "Interrupted" in err, err
    assert "Traceback" not in err, err
    assert lab.holder(place) is None
    assert took < 15, took
    assert lab.power.log == ["on"]
    if when == "measuring":
        [m] = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), 1).measurements
        assert m.status == "interrupted"


def test_a_place_taken_by_someone_else_or_missing_is_one_clear_sentence(lab, place, tmp_path, probe):
    lab.client("-p", place, "acquire", user="alice")
    try:
        (tmp_path / "c.toml").write_text(campaign(place, lab, 1, 1, f'coordinator = "{lab.address}"\n'))
        r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=cli_env(probe), timeout=60)
    finally:
        lab.client("-p", place, "release", user="alice")
    assert r.returncode == 3, r.stderr
    [line] = [x for x in r.stderr.splitlines() if x.startswith("rtvbench:")]
    assert f"labgrid place {place} is acquired by {socket.gethostname()}/alice" in line, line
    assert f"labgrid-client -p {place} who" in line
    assert lab.power.log == []              # nothing was switched on a place that is not ours

    (tmp_path / "c.toml").write_text(campaign("no-such-place", lab, 1, 1, f'coordinator = "{lab.address}"\n'))
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=cli_env(probe), timeout=60)
    assert r.returncode == 3, r.stderr
    assert (f"labgrid place no-such-place does not exist at the coordinator {lab.address} "
            in r.stderr), r.stderr
    assert "labgrid-client -p no-such-place create" in r.stderr
