"""The `boot` kind on an ssh environment with a reboot_command: the fake board of
tests/helpers/fake_board.py (the test sshd, switched off by its reboot command and on again OFF_S
later, with a boot_id and an uptime of its own) is rebooted and timed.

Ground truth: the board was unreachable for OFF_S after the command arrived, so the first login
comes at least OFF_S after it was sent and, polled every 0.2 s, less than LOGIN_SLACK_S later; its
kernel clock started KERNEL_S before its sshd listened again; the probe, wiped from the board's
/tmp by the reboot, answers again after the login. A command that does not reboot, a board that
comes back with the same boot_id and one that never comes back each fail with their own sentence."""

from __future__ import annotations

import json
import time

import pytest

from helpers import fake_board
from helpers.sshd import ALIAS
from helpers.sshd import available as sshd_available
from host_helpers import cli_env, run_cli
from rtvbench.campaign.reader import CampaignError, parse_campaign
from rtvbench.errors import TargetError
from rtvbench.store import load_run, open_store
from rtvbench.targets import capabilities
from rtvbench.targets.capabilities import PowerCycling
from rtvbench.targets.ssh import SshParams, SshTarget, _alive, boot_phases

OFF_S, KERNEL_S = 1.5, 0.5
LOGIN_SLACK_S = 1.5     # command -> request seen (a session: 0.1-0.4 s on a loaded 2-core machine), the login poll
SHORT_TIMEOUT_S = 2.0   # boot_timeout_s of the failure cases


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    why = sshd_available() or fake_board.available()
    if why:
        pytest.skip(why)
    b = fake_board.FakeBoard(tmp_path_factory.mktemp("board"), OFF_S, KERNEL_S).start()
    yield b
    b.stop()


def _env(board, **extra) -> str:
    keys = {"host": ALIAS, "ssh_config": str(board.sshd.config), "workdir": str(board.workdir),
            "reboot_command": board.reboot_command, **extra}
    return "[environments.board]\ntarget = \"ssh\"\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in keys.items())


def test_a_boot_campaign_times_each_reboot_of_the_board(board, tmp_path, probe):
    (tmp_path / "c.toml").write_text(f'name = "sshboot"\nrepetitions = 2\n{_env(board)}'
                                     '[benchmarks.boot]\nkind = "boot"\n')
    ids_before = board.boot_id
    started = time.monotonic()
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", "--export-json", "r.json", cwd=tmp_path,
                env=cli_env(probe), timeout=120)
    assert r.returncode == 0, r.stderr
    assert "Run 1 of sshboot finished: 2 of 2 measurements ok." in r.stdout, r.stdout
    run = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), 1)
    boots = [e for e in board.reboots if e.requested >= started]
    assert len(boots) == 2 and all(e.kernel and e.up for e in boots)
    ids = set()
    for s, res in fake_board.boots(run, "ssh boot"):
        assert OFF_S <= s["login"] < OFF_S + LOGIN_SLACK_S, s
        assert 0 < s["down"] < 0.5, s                     # the harness stops the sshd at once
        assert s["login"] <= s["total"] < s["login"] + 3.0, s
        # The new kernel's clock started KERNEL_S before sshd listened again (uptime: 10 ms steps).
        assert OFF_S - KERNEL_S - 0.02 <= s["to_kernel"] < OFF_S - KERNEL_S + LOGIN_SLACK_S, s
        assert s["to_kernel"] + s["from_kernel"] == pytest.approx(s["total"], abs=1e-6)
        assert res["probe_redeployed"] is True, res  # the reboot emptied the board's /tmp
        ids.add(res["boot_id"])
    assert ids_before not in ids and len(ids) == 2 and board.boot_id in ids
    doc = json.loads((tmp_path / "r.json").read_text())
    figures = {s["figure"] for s in doc["summaries"] if s["benchmark"] == "boot"}
    assert {"total_ms", "down_ms", "login_ms", "to_kernel_ms", "from_kernel_ms"} <= figures, figures
    assert {"kernel_ms", "init_ms"}.isdisjoint(figures)   # a board's /init is not seen over ssh


def _target(board, **keys) -> SshTarget:
    params = SshParams.model_validate({"host": ALIAS, "ssh_config": str(board.sshd.config),
                                       "workdir": str(board.workdir), "reboot_command": board.reboot_command,
                                       **keys})
    return SshTarget("board", params)


def _cycle_fails(board, **keys) -> tuple[str, float]:
    t = _target(board, **{"boot_timeout_s": SHORT_TIMEOUT_S, **keys})
    try:
        t.deploy_probe()
        started = time.monotonic()
        with pytest.raises(TargetError) as e:
            t.power_cycle()
        return str(e.value), time.monotonic() - started
    finally:
        t.close()


def test_a_command_that_does_not_reboot_fails_with_one_sentence(board):
    before = board.boot_id
    message, took = _cycle_fails(board, reboot_command="true")
    assert message.startswith("environment board (rtvb-test) did not reboot: it stayed connected, with "
                              "the same boot_id, for boot_timeout_s (2 s) after its reboot_command `true`"), message
    assert SHORT_TIMEOUT_S <= took < SHORT_TIMEOUT_S + 1.5 and board.boot_id == before
    assert message.count(". ") == 0 and message.endswith(".")


def test_a_failing_command_is_reported_at_once(board):
    message, took = _cycle_fails(board, reboot_command="echo 'sudo: a password is required' >&2; exit 1")
    assert "exited with status 1 (sudo: a password is required) and the board stays up" in message, message
    assert took < 1.0


def test_a_board_back_with_the_same_boot_id_did_not_reboot(board):
    board.mode = "same-id"
    try:
        message, _ = _cycle_fails(board, boot_timeout_s=10.0)
    finally:
        board.mode = "reboot"
    assert "did not reboot: its connection dropped" in message and \
        f"it answered again with the same boot_id ({board.boot_id})" in message, message


def test_a_board_that_never_comes_back_times_out(board):
    board.mode = "dead"
    try:
        message, took = _cycle_fails(board)
    finally:
        board.mode = "reboot"
        board.sshd.launch()
    assert message.startswith("environment board (rtvb-test) did not come back within boot_timeout_s (2 s) of "
                              "its reboot_command (which took it down in 0."), message
    assert "no ssh login has worked since (the last attempt: cannot connect to environment board" in message
    assert SHORT_TIMEOUT_S <= took < SHORT_TIMEOUT_S + 1.5


def test_the_phases_are_split_only_where_the_boards_clock_lines_up():
    # sent 0, down 1 s, login 5 s, ready 6 s; an uptime of 3 s puts the kernel's start at 3 s.
    s = 1_000_000_000
    assert boot_phases(0, 1 * s, 5 * s, 6 * s, 3.0) == {
        "total_ns": 6 * s, "down_ns": 1 * s, "login_ns": 5 * s, "uptime_ns": 3 * s,
        "to_kernel_ns": 3 * s, "from_kernel_ns": 3 * s}
    # An uptime longer than the time since going down (a clock that kept running), or so short that
    # the kernel would have started after the login: no split.
    for uptime in (5.5, 0.5):
        assert "to_kernel_ns" not in boot_phases(0, 1 * s, 5 * s, 6 * s, uptime)


def test_reboot_keys_are_validated_and_make_ssh_power_cyclable(tmp_path):
    (tmp_path / "ssh_config").write_text("Host board\n  User root\n")
    base = 'name = "c"\n[environments.board]\ntarget = "ssh"\nhost = "board"\n'
    ok = parse_campaign(base + 'reboot_command = "sudo reboot"\nboot_timeout_s = 60\n'
                        '[benchmarks.boot]\nkind = "boot"\n', "c.toml", tmp_path)
    board = ok.environments["board"]
    assert capabilities.missing(board, PowerCycling) is None and board.params.boot_timeout_s == 60
    bad = {'reboot_command = " "': "environments.board.reboot_command: must be a shell command that reboots",
           'boot_timeout_s = 60': "boot_timeout_s bounds a reboot, and this environment has no reboot_command",
           'reboot_command = "reboot"\nboot_timeout_s = 0': "environments.board.boot_timeout_s:"}
    for keys, message in bad.items():
        with pytest.raises(CampaignError) as e:
            parse_campaign(base + keys + "\n", "c.toml", tmp_path)
        assert message in str(e.value), (keys, str(e.value))
    with pytest.raises(CampaignError) as e:
        parse_campaign(base + '[benchmarks.boot]\nkind = "boot"\n', "c.toml", tmp_path)
    assert 'environment "board" is a ssh target without reboot_command, which rtvbench cannot power-cycle' \
        in str(e.value), str(e.value)


def test_an_ssh_board_cannot_be_killed_as_a_crash(board):
    t = _target(board)
    with pytest.raises(TargetError, match='cannot be killed as a crash would; use action = "reboot"'):
        t.power_cycle(hard=True)
    assert t.connection.master_pid() is None or not _alive(t.connection.master_pid())
