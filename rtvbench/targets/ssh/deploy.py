"""The probe's copy on the board. Each runner copies it into a directory of its own, named after
this machine and the runner's process, so that a later runner can tell the copy of one that was
killed (SIGKILL leaves no time to clean up) and remove it."""

from __future__ import annotations

import hashlib
import os
import shlex
import socket
from pathlib import Path

from rtvbench.errors import TargetError
from rtvbench.probe import binary as probe
from rtvbench.targets.ssh.connection import SshConnection, _alive, _last_line


def _remote_prefix() -> str:
    """The start of the probe directories that runners of this machine make on a target:
    rtvb.<this machine>.<pid>.XXXXXX, so that a later runner here can tell a dead runner's copy."""
    host = hashlib.sha1(socket.gethostname().encode()).hexdigest()[:8]
    return f"rtvb.{host}."


class ProbeCopy:
    """This runner's copy of the probe on the board: its directory and path, once deployed."""

    def __init__(self, connection: SshConnection) -> None:
        self._connection = connection
        self.directory: str | None = None
        self.path: str | None = None

    def deploy(self) -> str:
        c, q = self._connection, shlex.quote
        if self.path is not None:
            # Again after a lost connection: reach the target, and deploy anew if it restarted
            # (and emptied /tmp) meanwhile.
            if c.exec(f"test -x {q(self.path)}").returncode == 0:
                return self.path
            self.forget()
        arch = c.facts()["arch"]
        local = probe.probe_for_arch(arch)
        parent = c.params.workdir or "/tmp"
        _remove_dead_runners_probes(c, parent)
        r = c.exec(f"mktemp -d {q(parent.rstrip('/') or '/')}/{_remote_prefix()}{os.getpid()}.XXXXXX")
        where = f"environment {c.name} ({c.params.host})"
        if r.returncode != 0:
            raise TargetError(f"cannot create a directory in {parent} in {where}: "
                              f"{_last_line(r.stderr.decode(errors='replace'))}; set `workdir` to a "
                              "writable directory there.")
        self.directory = r.stdout.decode().strip()
        dest = f"{self.directory}/rtvb-probe"
        copy_probe(c, local, dest)
        self.path = dest
        return dest

    def remove(self) -> None:
        """Remove the copy's directory there, reconnecting after a dropped connection, unless the
        target was found unreachable already (no second connect timeout on the way out)."""
        if self.directory is not None and not self._connection.unreachable:
            try:
                self._connection.exec(f"rm -rf -- {shlex.quote(self.directory)}", timeout=30)
            except TargetError:
                pass        # the target is gone: nothing more to do there

    def forget(self) -> None:
        self.directory = self.path = None


def copy_probe(connection: SshConnection, local: Path, dest: str) -> None:
    """Copy the probe to `dest` (making its directory if a reboot removed it) and check that it
    runs there."""
    where = f"environment {connection.name} ({connection.params.host})"
    parent = connection.params.workdir or "/tmp"
    # One session: copy, check the size, check that it runs (exit 90: copying failed, 91: the
    # copy does not run). The directory's name is known (it is in the commands a user of the board
    # can list), so one that a reboot removed is made anew only as a directory of this user's that
    # nobody else may enter (92: a symlink or another user's directory took the name).
    with open(local, "rb") as f:
        r = connection.exec(f"f={shlex.quote(dest)}; d=\"${{f%/*}}\"; {{ [ -d \"$d\" ] || mkdir -m 700 -- \"$d\"; }} "
                            "&& [ ! -L \"$d\" ] && [ -O \"$d\" ] && chmod 700 -- \"$d\" || exit 92; "
                            "cat > \"$f\" && chmod 755 \"$f\" && wc -c < \"$f\" || exit 90; "
                            "\"$f\" --version >/dev/null || exit 91", stdin=f)
    problem = _last_line(r.stderr.decode(errors="replace"))
    if r.returncode == 92:
        raise TargetError(f"the probe's directory {dest.rpartition('/')[0]} in {where} is a symlink or not "
                          "this user's (somebody else made it); remove it there, or set `workdir` to a "
                          "directory only this user may write.")
    if r.returncode == 91:
        raise TargetError(f"the probe copied to {dest} does not run in {where} ({problem}); if "
                          f"{parent} is mounted noexec, set `workdir` to a directory that allows "
                          "programs.")
    if r.returncode != 0 or r.stdout.decode().split() != [str(local.stat().st_size)]:
        raise TargetError(f"copying the probe to {dest} in {where} failed ({problem}); check the "
                          "free space there, or set `workdir` to another directory.")


def _remove_dead_runners_probes(connection: SshConnection, parent: str) -> None:
    """Probe copies that runners of this machine left in `parent` when they were killed (SIGKILL
    leaves no time to clean up): their directories name the runner's process, which is gone."""
    prefix = _remote_prefix()
    r = connection.exec(f"cd {shlex.quote(parent)} 2>/dev/null && for d in {prefix}*.*; do "
                        "[ -d \"$d\" ] && printf '%s\\n' \"$d\"; done; true")
    stale = []
    for name in r.stdout.decode(errors="replace").split():
        pid = name[len(prefix):].partition(".")[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            stale.append(f"{parent.rstrip('/')}/{name}")
    if stale:
        connection.exec("rm -rf -- " + " ".join(shlex.quote(d) for d in stale), timeout=60)
