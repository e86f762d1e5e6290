"""ipc round trips between two environments (`peer`): the server started in the peer
environment before each measurement and gone after it, the client pointed at the address the
two targets agree on, figures per size in the report; local <-> local and local <-> ssh (a real
sshd on 127.0.0.1, tests/helpers/sshd.py); campaign errors for a bad peer or transport.

Ground truth: over loopback, `rtvb-probe ipc --serve` + `--connect` is the same TCP path as the
probe's local mode (a forked peer on 127.0.0.1), so the 16 B medians of the two, measured in the
same run in randomised interleaved order, must agree within a factor of 3. Both ends are pinned
to one CPU in both modes: unpinned, the figure is bimodal on this 2-vCPU VM (~20 us when the two
ends share a CPU, ~100 us when each wake-up has to rouse the other, halted vCPU), whichever mode
runs; pinned, both measure 15-25 us here. A wrong pairing (no server: the client fails; a server
in the wrong place: refused) yields no figure at all.
"""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path
from types import SimpleNamespace

import pytest

from helpers.sshd import ALIAS, Sshd, available
from host_helpers import cli_env, processes_with, run_cli
from rtvbench.errors import TargetError
from rtvbench.targets.local import LocalTarget, LocalParams

COUNT, REPS = 2000, 3
SERVER = "ipc --serve --transport"


def _run_and_report(tmp_path: Path, probe: Path, text: str) -> dict:
    (tmp_path / "c.toml").write_text(text)
    env = cli_env(probe)
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", "--export-json", "r.json", cwd=tmp_path, env=env,
                timeout=300)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    return json.loads((tmp_path / "r.json").read_text())


def _check_round_trips(m: dict, transport: str, sizes: list[int], address: str) -> None:
    assert m["status"] == "ok", m.get("error")
    argv = m["command"]
    assert argv[1:3] == ["ipc", "--connect"] and argv[argv.index("--transport") + 1] == transport
    host, _, port = argv[3].rpartition(":")
    assert host == address and 0 < int(port) < 65536
    f = m["figures"]
    for size in sizes:
        key = f"{transport}.{size}B"
        assert f[f"{key}.count"] == COUNT
        assert 0 < f[f"{key}.min"] <= f[f"{key}.p50"] <= f[f"{key}.p99"] <= f[f"{key}.max"], (key, f)
        # A loopback round trip of a few KiB costs microseconds, not nanoseconds or seconds.
        assert 1_000 < f[f"{key}.p50"] < 50_000_000, (key, f[f"{key}.p50"])


def test_local_peer_round_trips_end_to_end_and_match_local_mode(tmp_path, probe):
    doc = _run_and_report(tmp_path, probe, f'''
name = "rtt-local"
repetitions = {REPS}
seed = 5
[environments.native]
target = "local"
[environments.partner]
target = "local"
[benchmarks.rtt]
kind = "ipc"
peer = "partner"
sizes = [16, 4096]
count = {COUNT}
cpus = [0, 0]
[benchmarks.alone]
kind = "ipc"
transports = ["tcp"]
sizes = [16]
count = {COUNT}
cpus = [0, 0]
''')
    ms = doc["measurements"]
    assert len(ms) == 2 * 2 * REPS
    rtt = [m for m in ms if m["benchmark"] == "rtt"]
    # Both cells: native -> partner, and the peer's own cell through its loopback.
    assert sorted(m["environment"] for m in rtt) == ["native"] * REPS + ["partner"] * REPS
    for m in rtt:
        _check_round_trips(m, "tcp", [16, 4096], "127.0.0.1")
    # A port per measurement, chosen by the server (`--port 0`): never the probe's default.
    ports = {m["command"][3].rpartition(":")[2] for m in rtt}
    assert "47817" not in ports and len(ports) >= 2
    # Every server was stopped with its measurement.
    assert processes_with(SERVER) == []

    alone = [m for m in ms if m["benchmark"] == "alone" and m["environment"] == "native"]
    assert all(m["status"] == "ok" and "--connect" not in m["command"] for m in alone)
    served = statistics.median(m["figures"]["tcp.16B.p50"] for m in rtt if m["environment"] == "native")
    local = statistics.median(m["figures"]["tcp.16B.p50"] for m in alone)
    assert 1 / 3 < served / local < 3, (served, local)


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    why = available()
    if why:
        pytest.skip(why)
    server = Sshd(tmp_path_factory.mktemp("sshd")).start()
    yield server
    server.stop()


def test_round_trips_between_local_and_ssh_both_ways(sshd, tmp_path, probe):
    shutil.copy(sshd.config, tmp_path / "ssh_config")
    doc = _run_and_report(tmp_path, probe, f'''
name = "rtt-ssh"
seed = 2
[environments.native]
target = "local"
[environments.board]
target = "ssh"
host = "{ALIAS}"
ssh_config = "ssh_config"
[benchmarks.to_board]
kind = "ipc"
peer = "board"
sizes = [16, 4096]
count = {COUNT}
[benchmarks.to_native]
kind = "ipc"
peer = "native"
transports = ["udp"]
sizes = [64]
count = {COUNT}
''')
    by = {(m["environment"], m["benchmark"]): m for m in doc["measurements"]}
    assert len(by) == 4
    # local -> ssh: the board's HostName as resolved here; ssh -> local: this machine as the board
    # sees the connection come from ($SSH_CONNECTION); each peer's own cell: its loopback.
    _check_round_trips(by[("native", "to_board")], "tcp", [16, 4096], "127.0.0.1")
    _check_round_trips(by[("board", "to_board")], "tcp", [16, 4096], "127.0.0.1")
    _check_round_trips(by[("board", "to_native")], "udp", [64], "127.0.0.1")
    _check_round_trips(by[("native", "to_native")], "udp", [64], "127.0.0.1")
    # The board's client ran the deployed probe, the local one this machine's.
    assert by[("board", "to_native")]["command"][0].startswith("/tmp/rtvb.")
    assert by[("native", "to_board")]["command"][0] == str(probe)
    assert processes_with(SERVER) == []
    assert processes_with(str(tmp_path / "ssh_config")) == []
    assert sshd.connection_processes() == []


def test_an_ssh_host_is_resolved_to_a_numeric_address(sshd, tmp_path):
    """The probe cannot resolve names: `HostName localhost` must reach it as a number."""
    from rtvbench.targets.ssh import SshParams, SshTarget
    config = sshd.write_client_config(tmp_path / "ssh_config")
    config.write_text(config.read_text().replace("HostName 127.0.0.1", "HostName localhost"))
    board = SshTarget("board", SshParams(host=ALIAS, ssh_config=str(config)))
    native = LocalTarget("native", LocalParams())
    try:
        assert native.round_trip_address(board) in ("127.0.0.1", "::1")
        assert board.round_trip_address(board) == "127.0.0.1"
    finally:
        board.close()


def test_targets_that_cannot_be_joined_say_so():
    native = LocalTarget("native", LocalParams())
    board = SimpleNamespace(name="board", kind="labgrid")
    with pytest.raises(TargetError, match="environment board cannot be reached for round trips from native"):
        native.round_trip_address(board)


BASE = '''
name = "bad"
[environments.native]
target = "local"
[benchmarks.rtt]
kind = "ipc"
'''


@pytest.mark.parametrize("keys,expected", [
    ('peer = "board"', 'c.toml:7: benchmarks.rtt.peer: environment "board" is not defined (defined: "native"); '
                       "name the environment the round trips' server runs in"),
    ('peer = "native"\ntransports = ["unix"]',
     'c.toml:8: benchmarks.rtt.transports: transport "unix" does not cross between environments; with a peer '
     'use ["tcp"], ["udp"] or ["shm"] (got ["unix"])'),
    ('peer = "native"\ntransports = ["tcp", "udp"]',
     "c.toml:8: benchmarks.rtt.transports: with a peer, name one transport (the server serves one at a time); "
     'measure tcp, udp and shm as separate benchmarks (got ["tcp", "udp"])'),
    ('port = 5000', "c.toml:7: benchmarks.rtt.port: rtvbench starts the server and picks its port and address "
                    'itself; name the environment the server runs in with `peer = "ENV"` instead (got 5000)'),
])
def test_bad_peer_or_transport_is_a_campaign_error(tmp_path, probe, keys, expected):
    (tmp_path / "c.toml").write_text(BASE + keys + "\n")
    r = run_cli("validate", "c.toml", cwd=tmp_path, env=cli_env(probe))
    assert r.returncode == 2, r.stderr
    assert expected in r.stderr.splitlines(), r.stderr


def test_validate_refuses_a_peer_that_run_could_not_reach(tmp_path, probe):
    """What `run` refuses before its first measurement (a qemu guest without a network cannot reach a
    server on this machine), `validate` refuses too, in the same words."""
    (tmp_path / "vmlinuz").write_bytes(b"\0" * 64)
    (tmp_path / "c.toml").write_text(BASE + 'peer = "native"\n[environments.guest]\ntarget = "qemu"\n'
                                     'arch = "x86_64"\nkernel = "vmlinuz"\n')
    r = run_cli("validate", "c.toml", cwd=tmp_path, env=cli_env(probe))
    assert r.returncode == 2, r.stderr
    assert ("benchmarks.rtt.peer: environment guest is a qemu guest without a network, so it cannot do round "
            "trips with environment native; set `network = true` in environment guest") in r.stderr, r.stderr
