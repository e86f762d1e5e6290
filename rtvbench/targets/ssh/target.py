"""The `ssh` target: the Target interface over one SshConnection, which every command shares."""

from __future__ import annotations

import atexit
import shlex
import subprocess
import tempfile
import weakref
from typing import Any, Callable

from rtvbench.errors import TargetError, TargetLost
from rtvbench.procstat import mark_own, parse_process_stat
from rtvbench.targets.base import (TARGETS, Background, Completed, Deadline, Target, Watch, drain_or_stop,
                                   kill_timer, watched_drain)
from rtvbench.targets.capabilities import Capability, PowerCycling, ProcessListing
from rtvbench.targets.ssh import power
from rtvbench.targets.ssh.connection import SshConnection, _last_line, _tail
from rtvbench.targets.ssh.deploy import ProbeCopy
from rtvbench.targets.ssh.params import SshParams
from rtvbench.targets.ssh.session import SshBackground, _running, _Session
from rtvbench.targets.ssh.wrapper import EXIT_MARK, split_exit


@TARGETS.register("ssh")
class SshTarget(Target, ProcessListing, PowerCycling):
    kind = "ssh"
    Params = SshParams

    def __init__(self, name: str, params: SshParams) -> None:
        super().__init__(name, params)
        # Once its connection has made a control directory, the target has something to close at
        # exit. The connection holds a weak reference, as _live_targets does: it keeps no target alive.
        me = weakref.ref(self)
        self.connection = SshConnection(name, params, opened=lambda: _live_targets.add(me()))
        self.probe_copy = ProbeCopy(self.connection)

    # -- the Target interface -------------------------------------------------

    def process_ticks(self) -> dict[str, list] | None:
        """Every process of the board from one `cat` of /proc/*/stat (a process that ends meanwhile
        only makes cat complain), marked as rtvbench's when it descends from one of the wrapper
        shells this target runs its commands under (their command line carries the exit mark)."""
        try:
            r = self.connection.exec(f"grep -l {EXIT_MARK} /proc/[0-9]*/cmdline 2>/dev/null; echo @; "
                                     "cat /proc/[0-9]*/stat 2>/dev/null")
        except TargetError:
            return None
        marked, _, stats = ("\n" + r.stdout.decode(errors="replace")).partition("\n@\n")
        roots = {path.split("/")[2] for path in marked.split() if path.count("/") == 3}
        out, parents = {}, {}
        for line in stats.splitlines():
            parsed = parse_process_stat(line)
            if parsed:
                pid, name, ticks, cpu, ppid = parsed
                out[pid] = [name, ticks, cpu]
                parents[pid] = ppid
        return mark_own(out, parents, roots) if out else None

    def deploy_probe(self) -> str:
        return self.probe_copy.deploy()

    def run(self, argv: list[str], on_line: Callable[[str], None],
            deadline: Deadline | None = None) -> Completed:
        self.connection.connect()
        with tempfile.TemporaryFile() as err:
            session = _Session(self.connection, argv, subprocess.PIPE, err)
            proc = session.proc
            # The remote wrapper signals the command's group; once the watch gives up, ssh is killed
            # and the wrapper, seeing end of file, kills what is left.
            watch = Watch(deadline, lambda: session.request("TERM"), lambda: session.request("KILL"))
            try:
                _, interrupted = drain_or_stop(watched_drain(proc.stdout, on_line, watch),
                                               lambda: session.request("INT"), kill_timer(session.kill))
                while proc.poll() is None and not watch.tick():
                    try:
                        proc.wait(watch.wait_s())
                    except subprocess.TimeoutExpired:
                        pass
            finally:
                if proc.poll() is None:
                    session.kill()      # on_line failed, or a second Ctrl-C
                session.hang_up()
                proc.stdout.close()
            status, stderr = split_exit(_tail(err))
        if status is None:
            if interrupted or watch.overdue:
                return Completed(proc.returncode, stderr, interrupted, overdue=watch.overdue, killed=watch.sent == 2)
            log = f"ssh exited with status {proc.returncode}; its diagnostics and the command's " \
                  f"stderr:\n{stderr or '(none)'}"
            raise TargetLost(f"the connection to environment {self.name} ({self.params.host}) was "
                             f"lost while `{shlex.join(argv[:2])}` ran; it is re-established for "
                             "the next command.", log)
        return Completed(status, stderr, interrupted, overdue=watch.overdue, killed=watch.sent == 2)

    def start_background(self, argv: list[str], on_line: Callable[[str], None] | None = None, *,
                         alone: bool = False) -> Background:
        self.connection.connect()
        return SshBackground(self, self.connection, argv, on_line)

    def read_file(self, path: str) -> str:
        # A plain command: no wrapper needed for a `cat` that cannot hang.
        r = self.connection.exec(f"cat -- {shlex.quote(path)}")
        if r.returncode != 0:
            raise TargetError(f"cannot read {path} in environment {self.name} "
                              f"({_last_line(r.stderr.decode(errors='replace'))}).")
        return r.stdout.decode("utf-8", "replace")

    # -- rebooting the board (the `boot` kind) -----------------------------------------

    def capability_problem(self, capability: type[Capability]) -> str | None:
        if capability is PowerCycling and self.params.reboot_command is None:
            return "a ssh target without reboot_command"
        return None

    def power_cycle(self, hard: bool = False) -> dict[str, Any]:
        """Reboot the board with its reboot_command and time it until the probe answers again
        (power.reboot)."""
        if self.params.reboot_command is None:
            raise TargetError(f"environment {self.name} cannot be power-cycled (a ssh target without "
                              "reboot_command); measure boot times in qemu environments, or in ssh ones with "
                              "a reboot_command.")
        if hard:
            raise TargetError(f"environment {self.name} is an ssh target, rebooted by its reboot_command: it "
                              'cannot be killed as a crash would; use action = "reboot".')
        return power.reboot(self.connection, self.probe_copy.path or self.deploy_probe())

    def forget_connection(self) -> None:
        """Drop the master connection to a board that was switched off (killed if it hangs on the
        dead peer), keeping what is known of it: the probe's path, its facts."""
        self.connection.stop_master()

    def come_back(self, sent: int, down: int, before: str, probe_path: str, deadline: float,
                  within: str, not_rebooted: str) -> dict[str, Any]:
        """The second half of a timed boot, once the board went down (power.come_back)."""
        return power.come_back(self.connection, sent, down, before, probe_path, deadline, within, not_rebooted)

    def boot_id(self) -> str:
        """The board's boot_id: a new one at every boot."""
        return power.boot_id(self.connection)

    def resolved_host_address(self) -> str:
        return self.connection.resolved_host_address()

    reaches = ("local", "ssh")

    def round_trip_address(self, peer: Target) -> str:
        if peer is self:
            return "127.0.0.1"
        if peer.kind == "ssh":
            # Another board: where ssh reaches it from here, assumed reachable from this one too.
            return peer.resolved_host_address()
        if peer.kind == "local":
            # This machine as the board sees it: the source address of our ssh connection (behind a
            # ProxyJump or NAT that is the last hop's address, which then has to forward the port).
            r = self.connection.exec('printf "%s\\n" "$SSH_CONNECTION"')
            words = r.stdout.decode(errors="replace").split()
            if r.returncode != 0 or not words:
                raise TargetError(f"environment {self.name} ({self.params.host}) does not say where the "
                                  "ssh connection comes from ($SSH_CONNECTION is empty), so it cannot "
                                  "reach this machine for round trips; drop `peer` from the ipc benchmark.")
            return words[0].removeprefix("::ffff:") if "." in words[0] else words[0]
        return super().round_trip_address(peer)

    def machine(self) -> str:
        # The board as configured: the ssh destination without its user (two logins of one board
        # are one machine) and its port, unless the campaign names the board itself.
        if self.params.machine is not None:
            return self.params.machine
        board = self.params.host.rpartition("@")[2]
        return board if self.params.port is None else f"{board}:{self.params.port}"

    def describe(self) -> dict[str, Any]:
        facts = self.connection.facts()
        return {"target": "ssh", "host": self.params.host, "arch": facts["arch"],
                "hostname": facts["hostname"]}

    def close(self) -> None:
        if self.connection.control_dir is None:
            return
        self.probe_copy.remove()
        self.connection.close()
        self.probe_copy.forget()
        _live_targets.discard(self)


_live_targets: "weakref.WeakSet[SshTarget]" = weakref.WeakSet()


@atexit.register
def _clean_up() -> None:
    # Exit paths that skip the runner's finally blocks still stop every remote load and
    # close every master connection.
    for bg in list(_running):
        bg.stop()
    for target in list(_live_targets):
        target.close()
