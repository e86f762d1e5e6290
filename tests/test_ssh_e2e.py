"""End to end through the CLI with an ssh environment (a real sshd on 127.0.0.1, see
tests/helpers/sshd.py) beside the local one: both measured, compared in the report, nothing
left behind; and a measurement whose connection drops is stored failed with the ssh
diagnostics, then retried successfully."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from helpers.stored_so_far import stored_records
from helpers.sshd import ALIAS, Sshd
from host_helpers import cli_env, processes_with, run_cli, wait_for, wakeup_campaign
from rtvbench.store import load_run, open_store

REPS = 3


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    server = Sshd(tmp_path_factory.mktemp("sshd")).start()
    yield server
    server.stop()


SSH_ENV = f'''
[environments.board]
target = "ssh"
host = "{ALIAS}"
ssh_config = "ssh_config"
'''


@pytest.mark.functional
def test_local_and_ssh_environments_are_measured_and_compared(sshd, tmp_path, probe):
    shutil.copy(sshd.config, tmp_path / "ssh_config")      # found beside the campaign file
    (tmp_path / "c.toml").write_text(wakeup_campaign("ssh-e2e", '[environments.native]\ntarget = "local"\n'
                                              + SSH_ENV, 0.5, REPS))
    env = cli_env(probe)
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", "--export-json", "report.json", cwd=tmp_path, env=env,
                timeout=300)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert f"Run 1 of ssh-e2e finished: {2 * REPS} of {2 * REPS} measurements ok." in r.stdout

    run = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), 1)
    assert sorted(run.fingerprints) == ["board", "native"]
    board = run.targets["board"]
    assert board["target"] == "ssh" and board["host"] == ALIAS
    assert board["hostname"] == run.fingerprints["board"]["hostname"]
    deployed = set()
    for m in run.measurements:
        assert m.status == "ok", m.error
        expected = 500                      # 0.5 s at 1 ms
        assert abs(m.result("all")["count"] + m.result("all")["missed"] - expected) <= 0.05 * expected
        if m.environment == "board":
            assert Path(m.command[0]).name == "rtvb-probe" and m.command[0].startswith("/tmp/rtvb.")
            deployed.add(Path(m.command[0]).parent)
    assert len(deployed) == 1
    assert sum(m.environment == "board" for m in run.measurements) == REPS

    # The run closed its target: the deployed probe is removed, no ssh connection is left. The
    # connection's processes end asynchronously (the master is killed if it does not exit at once):
    # the waits are hang guards.
    assert not any(d.exists() for d in deployed)
    wait_for(lambda: processes_with(str(tmp_path / "ssh_config")) == [], 60, "the ssh client processes to end")
    wait_for(lambda: sshd.connection_processes() == [], 60, "the server side of the connection to end")

    out = tmp_path / "report.json"
    doc = json.loads(out.read_text())
    across = [c for c in doc["comparisons"] if c["axis"] == "environment"]
    assert {(c["baseline"]["environment"], c["candidate"]["environment"]) for c in across} == {("native", "board")}
    p99 = next(c for c in across if c["figure"] == "p99_us")
    assert p99["n_baseline"] == REPS and p99["n_candidate"] == REPS
    html = (tmp_path / "rtvbench-results" / "ssh-e2e-1.html").read_text()
    assert "board" in html and "native" in html and ALIAS in html


SPINNER = ("import os; os.sched_setaffinity(0, {0}); open('/proc/self/comm', 'w').write('rtvb-spinner')\n"
           "while True: pass\n")


HALF_LOAD = """
[loads.half]
kind = "cpu"
cpus = [0]
percent = 50
"""


@pytest.mark.parametrize("load", ["idle", "under a load"])
def test_a_busy_board_is_judged_and_its_busiest_process_named(sshd, tmp_path, probe, load):
    """The board's own process list (read over ssh) names what took the measured CPU: a spinner on
    CPU 0 of the board (this machine, behind the sshd) makes the requirement INCONCLUSIVE. Under a
    load of the campaign the load's processes are told from it: they descend from the wrapper shell
    rtvbench runs commands under."""
    shutil.copy(sshd.config, tmp_path / "ssh_config")
    (tmp_path / "c.toml").write_text(wakeup_campaign("ssh-busy", SSH_ENV + (HALF_LOAD if load != "idle" else ""),
                                                     0.5, 1)
                                     + "[[requirements]]\nmetric = \"wakeup.max_us\"\nmax = 10000000\n")
    spinner = subprocess.Popen([sys.executable, "-c", SPINNER])
    try:
        time.sleep(0.3)
        r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", "--export-json", "report.json", cwd=tmp_path,
                    env=cli_env(probe), timeout=300)
    finally:
        spinner.kill()
        spinner.wait()
    assert r.returncode == 0, r.stderr
    out = tmp_path / "report.json"
    [verdict] = json.loads(out.read_text())["verdicts"]
    assert verdict["status"] == "INCONCLUSIVE", verdict
    other = "the probe" if load == "idle" else "the probe and the load"
    assert f"went to processes other than {other} (" in verdict["reason"], verdict
    assert f"rtvb-spinner (pid {spinner.pid})" in verdict["reason"], verdict
    m = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), 1).measurements[0]
    # The thermal sampler ran on the board too (started through ssh): a sample before and one after.
    assert len(m.cpu_stat["thermal"]["samples"]) >= 2
    if load != "idle":
        # The load ran on CPU 0 too, yet only the spinner is named: its processes were told apart.
        load_pid = str(m.load_records["half"][0]["pid"])
        assert m.cpu_stat["processes_after"][load_pid][3] == 1
        assert m.cpu_stat["processes_after"][str(spinner.pid)][3] == 0
        assert "rtvb-probe" not in verdict["reason"].split("limit")[1]


def held_probe(tmp_path: Path, probe: Path) -> Path:
    """rtvb-probe, except that its first `latency` runs until something stops it: its --duration-s
    becomes 600. The board is this machine, so the copy rtvbench deploys runs the real probe by its
    path here. Everything else, the retry of that measurement included, runs as asked."""
    wrapper = tmp_path / "rtvb-probe"
    wrapper.write_text(f"""#!/bin/sh
if [ "$1" = latency ] && mkdir {shlex.quote(str(tmp_path / "held"))} 2>/dev/null; then
    prev=
    for a do
        shift
        if [ "$prev" = --duration-s ]; then set -- "$@" 600; else set -- "$@" "$a"; fi
        prev=$a
    done
fi
exec {shlex.quote(str(probe))} "$@"
""")
    wrapper.chmod(0o755)
    return wrapper


@pytest.mark.functional
@pytest.mark.timeout(600)           # a hang guard
def test_a_dropped_connection_is_recorded_and_the_measurement_retried(sshd, tmp_path, probe):
    shutil.copy(sshd.config, tmp_path / "ssh_config")
    (tmp_path / "c.toml").write_text(wakeup_campaign("ssh-drop", SSH_ENV, 2, 1))
    dropped: list[float] = []

    def drop_during_the_first_measurement() -> None:
        # The first attempt measures until its connection is dropped (held_probe): a window of it
        # in the store means it runs, and it still runs when the connection is dropped.
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            if stored_records(tmp_path / "s.db", "window"):
                sshd.drop_connections()
                dropped.append(time.monotonic())
                return
            time.sleep(0.05)

    watcher = threading.Thread(target=drop_during_the_first_measurement, daemon=True)
    watcher.start()
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path,
                env=cli_env(held_probe(tmp_path, probe)), timeout=480)
    watcher.join(5)
    assert dropped, "the first measurement was never seen storing a window"
    assert (tmp_path / "held").is_dir(), "the first measurement was not the held one"
    assert r.returncode == 0, r.stderr
    assert "target lost" in r.stderr and "retrying" in r.stderr
    assert "Run 1 of ssh-drop finished: 1 of 1 measurements ok." in r.stdout

    run = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), 1)
    [m] = run.measurements
    assert (m.status, m.attempt) == ("ok", 2)
    assert m.result("all")["count"] + m.result("all")["missed"] >= 1900
    [failed] = run.failed_attempts
    assert failed.attempt == 1 and "was lost while" in failed.error
    assert failed.target_log.startswith("ssh exited with status 255")
    wait_for(lambda: processes_with(str(tmp_path / "ssh_config")) == [], 60, "the ssh client processes to end")

