"""Rebooting a board and timing its boot (the `boot` kind). The second half, from the board
going down to the probe answering again, is come_back on its own: the labgrid target switches a
board's power instead of sending a reboot_command, and times the rest the same way."""

from __future__ import annotations

import shlex
import subprocess
import tempfile
import time
from typing import IO, Any

from rtvbench.errors import TargetError
from rtvbench.probe import binary as probe
from rtvbench.targets.ssh.connection import SshConnection, _alive, _last_line, _tail
from rtvbench.targets.ssh.deploy import copy_probe

BOOT_TIMEOUT_S = 300        # reboot_command -> the probe answers again: a slow board boots in minutes
# While the board goes down: how often the master connection's process is looked at (in /proc: no
# network), and how often, and how patiently, the board is asked for its boot_id through it.
DOWN_CHECK_S, BOOT_ID_EVERY_S, BOOT_ID_ANSWER_S = 0.05, 1.0, 3.0
LOGIN_RETRY_S = 0.2         # between login attempts while the board boots
BOOT_ID = "/proc/sys/kernel/random/boot_id"


def reboot(connection: SshConnection, probe_path: str) -> dict[str, Any]:
    """Reboot the board with its reboot_command and time it until the probe answers again.

    Every time is counted on this machine from the moment the command is sent: `down_ns` when
    the board went away (its side closed our master connection, or it stopped answering through
    it), `login_ns` at the first new ssh login, `total_ns` when the probe (copied again if the
    reboot emptied its directory) answered `--version`. The board's /proc/uptime read with that
    answer places the start of its new kernel's clock: `to_kernel_ns` and `from_kernel_ns`, only
    where that lies between going down and the login (else the clocks do not line up). The
    boot_id read before and after tells a reboot from a connection that merely dropped."""
    p = connection.params
    timeout_s = p.boot_timeout_s or BOOT_TIMEOUT_S
    before = boot_id(connection)
    master = connection.master_pid()
    with tempfile.TemporaryFile() as err:
        t0 = time.monotonic_ns()
        deadline = t0 / 1e9 + timeout_s
        command = subprocess.Popen(connection.client_argv(p.reboot_command), stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        try:
            down = _wait_down(connection, command, err, master, before, deadline, timeout_s)
            # A master stuck on a board that vanished without closing it goes the hard way.
            connection.stop_master()
            return come_back(
                connection, t0, down, before, probe_path, deadline,
                f"boot_timeout_s ({timeout_s:g} s) of its reboot_command (which took it down in "
                f"{(down - t0) / 1e9:.1f} s)",
                f"its connection dropped {(down - t0) / 1e9:.1f} s after the reboot_command "
                f"`{p.reboot_command}`, but it answered again with the same boot_id ({before}), so the "
                "command ended the ssh connection without rebooting the board")
        finally:
            if command.poll() is None:
                command.kill()      # its session went with the old boot; ssh may not know yet
            command.wait()


def come_back(connection: SshConnection, sent: int, down: int, before: str, probe_path: str,
              deadline: float, within: str, not_rebooted: str) -> dict[str, Any]:
    """The second half of a timed boot, once the board went down (monotonic ns `sent` and
    `down`; its master connection stopped): log in again as soon as it lets us (by `deadline`,
    else "did not come back within <within>"), check that its boot_id is new (else "did not
    reboot: <not_rebooted>"), copy the probe back if the boot removed it, and the phases once
    it answers."""
    login = _wait_login(connection, deadline, within)
    # One session for both: every session counts in the boot time.
    r = connection.exec(f"cat {BOOT_ID} && {{ test -x {shlex.quote(probe_path)} || echo missing; }}")
    after, _, missing = r.stdout.decode(errors="replace").strip().partition("\n")
    if after == before:
        raise TargetError(f"environment {connection.name} ({connection.params.host}) did not reboot: "
                          f"{not_rebooted}.")
    if missing:
        # The reboot emptied its directory (a /tmp on tmpfs): back to the same path, which the
        # runner's command line names.
        copy_probe(connection, probe.probe_for_arch(connection.facts()["arch"]), probe_path)
    r = connection.exec(f"{shlex.quote(probe_path)} --version >/dev/null && cat /proc/uptime")
    ready = time.monotonic_ns()
    words = r.stdout.decode(errors="replace").split()
    if r.returncode != 0 or not words:
        raise TargetError(f"the probe {probe_path} does not run in environment {connection.name} "
                          f"({connection.params.host}) after its reboot: "
                          f"{_last_line(r.stderr.decode(errors='replace'))}.")
    return boot_phases(sent, down, login, ready, float(words[0])) | {"probe_redeployed": bool(missing)}


def boot_id(connection: SshConnection) -> str:
    """The board's boot_id: a new one at every boot."""
    r = connection.exec(f"cat {BOOT_ID}")
    boot_id = r.stdout.decode(errors="replace").strip()
    if r.returncode != 0 or not boot_id:
        raise TargetError(f"environment {connection.name} ({connection.params.host}) has no readable "
                          f"{BOOT_ID} ({_last_line(r.stderr.decode(errors='replace'))}), by which rtvbench "
                          "tells that it rebooted; its boot cannot be timed.")
    return boot_id


def _ask_boot_id(connection: SshConnection, patience_s: float) -> str | None:
    """The boot_id through the master connection, or None when it does not answer in time."""
    try:
        r = subprocess.run(connection.client_argv(f"cat {BOOT_ID}"), stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=patience_s, start_new_session=True)
    except subprocess.TimeoutExpired:
        return None
    return r.stdout.decode(errors="replace").strip() if r.returncode == 0 else None


def _wait_down(connection: SshConnection, command: subprocess.Popen, err: IO[bytes], master: int | None,
               before: str, deadline: float, timeout_s: float) -> int:
    """When the board went away: monotonic ns at which its master connection was found closed
    (a rebooting system stops sshd and its sessions), or at which a boot_id request through it
    went unanswered (a board that vanished without closing it: the connection stays open on
    our side until ServerAlive gives up)."""
    name, p = connection.name, connection.params
    next_ask = time.monotonic() + BOOT_ID_EVERY_S
    while True:
        now = time.monotonic_ns()
        if master is None or not _alive(master):
            return now
        status = command.poll()
        if status not in (None, 0, 255) and _alive(master):
            raise TargetError(f"the reboot_command of environment {name} ({p.host}), "
                              f"`{p.reboot_command}`, exited with status {status} "
                              f"({_last_line(_tail(err))}) and the board stays up; run it there by hand "
                              "(sudo must be allowed to run it without a password).")
        if time.monotonic() >= deadline:
            raise TargetError(f"environment {name} ({p.host}) did not reboot: it stayed connected, "
                              f"with the same boot_id, for boot_timeout_s ({timeout_s:g} s) after its "
                              f"reboot_command `{p.reboot_command}`; run that command there by hand to "
                              "see why it does not reboot the board.")
        if time.monotonic() >= next_ask:
            answer = _ask_boot_id(connection, BOOT_ID_ANSWER_S)
            if answer is None or answer != before:
                return now
            next_ask = time.monotonic() + BOOT_ID_EVERY_S
        time.sleep(DOWN_CHECK_S)


def _wait_login(connection: SshConnection, deadline: float, within: str) -> int:
    """Monotonic ns of the first ssh login that works again (a new master connection)."""
    while True:
        try:
            connection.connect(timeout=max(1.0, deadline - time.monotonic()))
            return time.monotonic_ns()
        except TargetError as e:
            last = str(e).rstrip(".")
        if time.monotonic() >= deadline:
            raise TargetError(f"environment {connection.name} ({connection.params.host}) did not come "
                              f"back within {within}: no ssh login has worked since (the last attempt: "
                              f"{last}).")
        time.sleep(LOGIN_RETRY_S)


def boot_phases(sent: int, down: int, login: int, ready: int, uptime_s: float) -> dict[str, float]:
    """A board's reboot in ns from the monotonic times (ns, this machine) at which the reboot command
    was sent, the board went down, a login worked and the probe answered, and the board's uptime
    read with that answer. Its kernel's clock started uptime before the answer: that splits the
    boot where it lies between going down and the login; else (a clock that kept running, a board
    that did not really power off) the split is left out rather than made up."""
    out = {"total_ns": ready - sent, "down_ns": down - sent, "login_ns": login - sent,
           "uptime_ns": uptime_s * 1e9}
    kernel_at = ready - uptime_s * 1e9
    if down <= kernel_at <= login:
        out["to_kernel_ns"] = kernel_at - sent
        out["from_kernel_ns"] = ready - kernel_at
    return out
