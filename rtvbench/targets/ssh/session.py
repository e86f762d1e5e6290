"""Commands whose output streams back while they run: the probe, and loads in the background.

Each runs under a small remote sh wrapper (wrapper.py) that gives it a process group, forwards
the signal requests written on ssh's stdin, and kills it when the connection goes.
"""

from __future__ import annotations

import subprocess
import tempfile
import threading
from typing import IO, Any, Callable

from rtvbench.targets.base import Background, Target, drain_lines
from rtvbench.targets.ssh.connection import SshConnection, _tail
from rtvbench.targets.ssh.wrapper import remote_command, split_exit

STOP_GRACE_S = 2            # SIGTERM -> SIGKILL delay for loads (and on a lost connection)

_running: set["SshBackground"] = set()


class _Session:
    """One wrapped remote command: the local ssh process and its request channel."""

    def __init__(self, connection: SshConnection, argv: list[str], stdout: Any, stderr: IO[bytes]) -> None:
        self.argv = argv
        self._lock = threading.Lock()
        self.proc = subprocess.Popen(
            connection.client_argv(remote_command(argv, STOP_GRACE_S)),
            stdin=subprocess.PIPE, stdout=stdout, stderr=stderr,
            # Ctrl-C at the terminal reaches rtvbench only: ssh dying of it would drop the
            # session before the probe could be asked to print its results.
            start_new_session=True)

    def request(self, what: str) -> None:
        """Ask the remote wrapper to signal the command (INT, TERM, KILL)."""
        with self._lock:
            try:
                self.proc.stdin.write(what.encode() + b"\n")
                self.proc.stdin.flush()
            except (OSError, ValueError):
                pass        # ssh has gone: the wrapper saw end of file and kills the group

    def hang_up(self) -> None:
        with self._lock:
            try:
                self.proc.stdin.close()
            except OSError:
                pass

    def kill(self, wait_s: float = 3.0) -> None:
        """Kill the remote group, then let go of ssh; the wrapper kills on end of file too."""
        self.request("KILL")
        self.hang_up()
        try:
            self.proc.wait(wait_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class SshBackground(Background):
    """A load command under the remote wrapper.

    Without on_line, its stdout and stderr go to one temporary file (output_tail). With on_line,
    stdout is read line by line by a thread of ours, and stderr alone goes to the file."""

    READER_JOIN_S = 5.0

    def __init__(self, target: Target, connection: SshConnection, argv: list[str],
                 on_line: Callable[[str], None] | None = None) -> None:
        self.argv = argv
        # Held while the load runs: a target that still has one is closed at exit.
        self._target = target
        self._connection = connection
        self._err = tempfile.TemporaryFile()
        self._failure: str | None = None
        self._reader: threading.Thread | None = None
        self._session = _Session(connection, argv, self._err if on_line is None else subprocess.PIPE,
                                 self._err)
        _running.add(self)
        if on_line is not None:
            self._reader = threading.Thread(target=self._read, args=(on_line,), daemon=True,
                                            name=f"ssh-load-output-{self._session.proc.pid}")
            self._reader.start()

    def _read(self, on_line: Callable[[str], None]) -> None:
        drain_lines(self._session.proc.stdout, on_line, self._failed)

    def _failed(self, why: str) -> None:
        self._failure = why

    def poll(self) -> int | None:
        if self._session.proc.poll() is None:
            return None
        status, _ = split_exit(_tail(self._err))
        # No status from the wrapper: the connection went (ssh's own 255).
        return status if status is not None else self._session.proc.returncode

    def stop(self) -> None:
        proc = self._session.proc
        if proc.poll() is None:
            self._session.request("TERM")
            try:
                proc.wait(STOP_GRACE_S + 1)
            except subprocess.TimeoutExpired:
                self._session.kill()
        self._session.hang_up()
        if self._reader is not None:
            # The command's last lines (a load's final window, result and end) are printed
            # while it stops; they are delivered before stop() returns.
            self._reader.join(self.READER_JOIN_S)
            self._reader = None
            proc.stdout.close()
        _running.discard(self)

    def output_tail(self) -> str:
        status, rest = split_exit(_tail(self._err))
        if status is None and self._session.proc.poll() is not None:
            rest = (rest + "\n" if rest else "") + f"(the connection to {self._connection.params.host} was lost)"
        return rest

    def failure(self) -> str | None:
        return self._failure
