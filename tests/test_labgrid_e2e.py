"""The labgrid target end to end: a real labgrid coordinator and exporter on 127.0.0.1
(tests/helpers/labgrid_lab.py), a place whose board is a private sshd switched by a `rest`
power port, and `rtvbench run` on it through the CLI."""

from __future__ import annotations

import getpass
import itertools
import signal
import socket
import tempfile
import threading
import time
from pathlib import Path

import pytest

from helpers.stored_so_far import stored_records
from helpers.labgrid_lab import Lab, PowerSwitch, SerialBoard, power_port
from helpers.sshd import Sshd, _free_port
from host_helpers import cli_env, processes_with, run_cli, start_cli, wait_for, wakeup_campaign
from rtvbench.store import load_run, open_store

pytestmark = pytest.mark.ssh
_PLACES = itertools.count(1)


@pytest.fixture(scope="module")
def lab(tmp_path_factory, probe):
    root = tmp_path_factory.mktemp("lab")
    board = Sshd(root / "board").start()
    board.stop()                        # a board starts switched off
    power = PowerSwitch(board.launch, board.stop)
    serial = SerialBoard(probe, root / "agent.log")
    serial_power = PowerSwitch(serial.boot, serial.halt)
    lab = Lab(root, "board:\n"
                    "  NetworkService:\n"
                    "    address: 127.0.0.1\n"
                    f"    username: {getpass.getuser()}\n"
                    f"    port: {board.port}\n"
                    + power_port(power)
                    + "serialboard:\n" + serial.resource() + power_port(serial_power))
    lab.board, lab.power, lab.serial, lab.serial_power = board, power, serial, serial_power
    # ssh verifies the board's key and logs in with the test's own key, as for the ssh target.
    board.write_client_config(root / "ssh_config", alias="127.0.0.1")
    try:
        yield lab.start()
    finally:
        lab.stop()
        for switch in (power, serial_power):
            switch.close()
        board.stop()
        serial.close()


def _fresh_place(lab: Lab, group: str, switch: PowerSwitch):
    name = f"rtvb-place-{next(_PLACES)}"      # one per test: a place is never reused
    lab.add_place(name, group)
    switch.set(False)
    switch.dead = False
    switch.log.clear()
    yield name
    switch.set(False)


@pytest.fixture
def place(lab):
    yield from _fresh_place(lab, "board", lab.power)


@pytest.fixture
def serial_place(lab):
    yield from _fresh_place(lab, "serialboard", lab.serial_power)


def campaign(place: str, lab: Lab, duration_s: float, reps: int, extra: str = "", serial: bool = False,
             boot_timeout_s: float = 20) -> str:
    reach = 'connection = "serial"\nhang_timeout_s = 3' if serial else f'ssh_config = "{lab.root / "ssh_config"}"'
    return wakeup_campaign("lab", f'''
[environments.board]
target = "labgrid"
place = "{place}"
{reach}
power_off_s = 0.2
boot_timeout_s = {boot_timeout_s}
{extra}''', duration_s, reps)


#: the latency measurement the board hangs in: long enough that the hang, 0.4 s after the watcher saw the
#: probe (which it may see late on a busy machine), always comes before the probe's result
HUNG_MEASUREMENT_S = 4.0


def run_hanging_midway(lab: Lab, place: str, cwd, env: dict, probe_commands, hang):
    """`rtvbench run` of the campaign in cwd, the board hung (`hang`: no answer, power still on)
    0.4 s into the latency measurement; checks that the run then ended well after a power cycle.
    Returns its result, who held the place while it ran, and how long it took."""
    holders: set[str | None] = set()
    hung: list[float] = []

    def watch() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not hung:
            holders.add(lab.holder(place))
            if any("latency" in cmd for cmd in probe_commands()):
                time.sleep(0.4)
                hang()
                hung.append(time.monotonic())
            time.sleep(0.1)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    started = time.monotonic()
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=cwd, env=env, timeout=120)
    took = time.monotonic() - started
    watcher.join(5)
    assert r.returncode == 0, r.stderr + lab.logs()
    assert hung, "the latency probe was never seen running on the board"
    assert "Run 1 of lab finished: 1 of 1 measurements ok." in r.stdout
    assert f"power-cycling labgrid place {place}." in r.stderr
    return r, holders, took


def test_a_campaign_on_a_labgrid_place_powers_measures_recovers_and_releases(lab, place, tmp_path, probe):
    """The coordinator comes from LG_COORDINATOR. The place is held during the run and free after;
    the board, off at first, is switched on; when it stops answering midway (its sshd killed,
    power still on) it is power-cycled and the lost measurement is measured again."""
    (tmp_path / "c.toml").write_text(campaign(place, lab, HUNG_MEASUREMENT_S, 1))
    r, holders, took = run_hanging_midway(lab, place, tmp_path, cli_env(probe, LG_COORDINATOR=lab.address),
                                          lab.board.probe_commands, lab.board.stop)
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
        assert abs(seen - HUNG_MEASUREMENT_S * 1000) <= HUNG_MEASUREMENT_S * 50, seen     # at 1 ms
    [failed] = run.failed_attempts
    assert failed.attempt == 1 and [m.attempt for m in run.measurements] == [2]
    assert processes_with(str(lab.root / "ssh_config")) == []     # no ssh connection left
    print(f"labgrid run with a power cycle took {took:.1f} s")


@pytest.mark.parametrize("sig, when", [(signal.SIGINT, "measuring"), (signal.SIGTERM, "booting")],
                         ids=["SIGINT-measuring", "SIGTERM-booting"])
@pytest.mark.functional
@pytest.mark.timeout(600)           # a hang guard
def test_the_place_is_released_when_the_run_is_stopped(lab, place, tmp_path, probe, sig, when):
    """SIGINT during a measurement; SIGTERM while rtvbench waits for a board that does not boot
    (before any measurement, where the runner's own interrupt handling did not reach before)."""
    lab.power.dead = when == "booting"
    # Whatever the machine's load, the signal finds the run where it is meant to: the measurement
    # would last 10 minutes, and the dead board is waited for as long.
    (tmp_path / "c.toml").write_text(campaign(place, lab, 600, 1, f'coordinator = "{lab.address}"\n',
                                              boot_timeout_s=600))
    proc = start_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=cli_env(probe))
    try:
        # The waits are hang guards: each step takes seconds, more on a busy machine.
        wait_for(lambda: lab.holder(place), 120, "the place to be acquired")
        if when == "measuring":
            wait_for(lambda: stored_records(tmp_path / "s.db", "window"), 120, "a window of the measurement")
        else:
            wait_for(lambda: lab.power.log == ["on"], 120, "the board to be switched on")
            # The runner tries to reach the board from then on; its first attempt makes the ssh
            # control directory of its own (rtvbench/targets/ssh/connection.py: rtvb-ssh-<runner pid>-...).
            base = tempfile.gettempdir() if len(tempfile.gettempdir()) < 60 else "/tmp"
            wait_for(lambda: list(Path(base).glob(f"rtvb-ssh-{proc.pid}-*")), 120,
                     "the runner to try to reach the board")
        stopped = time.monotonic()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=120)
        took = time.monotonic() - stopped
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "Interrupted" in err, err
    assert "Traceback" not in err, err
    assert lab.holder(place) is None
    # The probe's 5 s grace at most, then the teardown: a bound for a busy machine, yet far below the
    # 600 s that a run which ignored the signal would take (measuring, or waiting for the board).
    assert took < 120, took
    assert lab.power.log == ["on"]
    if when == "measuring":
        [m] = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), 1).measurements
        assert m.status == "interrupted"


@pytest.mark.functional
@pytest.mark.timeout(600)           # a hang guard: three runs of the CLI and labgrid's own clients
def test_a_place_taken_by_someone_else_or_missing_or_no_coordinator_is_one_clear_sentence(lab, place, tmp_path, probe):
    lab.client("-p", place, "acquire", user="alice")
    try:
        (tmp_path / "c.toml").write_text(campaign(place, lab, 1, 1, f'coordinator = "{lab.address}"\n'))
        r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", "--reserve-timeout", "1s", cwd=tmp_path,
                    env=cli_env(probe), timeout=120)
    finally:
        lab.client("-p", place, "release", user="alice")
    assert r.returncode == 3, r.stderr
    [line] = [x for x in r.stderr.splitlines() if x.startswith("rtvbench:") and "waiting up to" not in x]
    assert f"labgrid place {place} is acquired by {socket.gethostname()}/alice" in line, line
    assert f"labgrid-client -p {place} who" in line
    assert lab.power.log == []              # nothing was switched on a place that is not ours

    (tmp_path / "c.toml").write_text(campaign("no-such-place", lab, 1, 1, f'coordinator = "{lab.address}"\n'))
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=cli_env(probe), timeout=120)
    assert r.returncode == 3, r.stderr
    assert (f"labgrid place no-such-place does not exist at the coordinator {lab.address} "
            in r.stderr), r.stderr
    assert "labgrid-client -p no-such-place create" in r.stderr

    nobody = f"127.0.0.1:{_free_port()}"
    (tmp_path / "c.toml").write_text(campaign(place, lab, 1, 1, f'coordinator = "{nobody}"\n'))
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=cli_env(probe), timeout=120)
    assert r.returncode == 3, r.stderr
    [line] = r.stderr.splitlines()         # labgrid's own log line is folded into it
    assert line.startswith(f"rtvbench: cannot reach the labgrid coordinator at {nobody} for environment board ("), line
    assert "Connection refused" in line and "set `coordinator` (or LG_COORDINATOR)" in line, line


def test_a_board_reached_over_its_serial_line_is_measured_and_power_cycled(lab, serial_place, tmp_path, probe):
    """The same through the place's serial port, where the probe's agent serves the line: the
    probe that serves it measures, and a board whose agent dies midway (power still on) is noticed
    by its missing heartbeat, power-cycled, and the lost measurement measured again."""
    (tmp_path / "c.toml").write_text(campaign(serial_place, lab, HUNG_MEASUREMENT_S, 1, f'coordinator = "{lab.address}"\n',
                                              serial=True))
    r, holders, took = run_hanging_midway(lab, serial_place, tmp_path, cli_env(probe),
                                          lab.serial.probe_commands, lab.serial.halt)
    assert f"{socket.gethostname()}/{getpass.getuser()}" in holders, holders
    assert lab.holder(serial_place) is None
    assert lab.serial_power.log == ["on", "off", "on"], lab.serial_power.log

    run = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), 1)
    board = run.targets["board"]
    assert (board["target"], board["connection"]) == ("labgrid", "serial")
    assert board["serial"] == f"127.0.0.1:{lab.serial.port}" and board["probe_version"]
    for m in run.measurements:
        assert m.status == "ok", m.error
        assert m.command[0].startswith("/proc/") and m.command[0].endswith("/exe")
        seen = m.result("all")["count"] + m.result("all")["missed"]
        assert abs(seen - HUNG_MEASUREMENT_S * 1000) <= HUNG_MEASUREMENT_S * 50, seen
    [failed] = run.failed_attempts
    assert failed.attempt == 1 and [m.attempt for m in run.measurements] == [2]
    assert "no heartbeat for 3 s" in failed.error, failed.error
    print(f"labgrid run over a serial line with a power cycle took {took:.1f} s")
