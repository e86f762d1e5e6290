"""A board reached over its serial line, where `rtvb-probe agent --channel /dev/ttyX` serves the
agent protocol (docs/probe/init.md) that qemu guests serve on their virtio-serial port.

The line is any pyserial-like port (read with a timeout, write, in_waiting): for the labgrid
target, the port of labgrid's SerialDriver, which speaks RFC 2217 or raw TCP to the exporter's
ser2net. Two threads copy between it and one end of a socket pair whose other end is the
qemu target's AgentChannel, so commands, signals, file reads and the heartbeat watch are the
qemu target's own (ChannelTarget). Unlike a guest's channel, a serial line never closes when
the board dies: the board is taken as lost when its agent's heartbeat (`tick`, once a second)
stops for hang_timeout_s.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any, Callable

from rtvbench.errors import TargetError, TargetLost
from rtvbench.targets.qemu.channel import AgentChannel
from rtvbench.targets.qemu.target import ChannelTarget

READ_TIMEOUT_S = 0.2        # a blocked read of the port notices a stop request this often
HEARTBEAT_WAIT_S = 3.0      # ticks come once a second: three missed ones mean no agent


def program_problem(program: str) -> str | None:
    """Why a load's program cannot run on a board reached over its serial line, or None."""
    if program.startswith("/"):
        return None
    return (f'program "{program}" must be given by its absolute path on a board reached over its '
            "serial line (the probe's agent does not search PATH)")


class SerialLine:
    """The connection to a board's agent over a serial port; what ChannelTarget calls its guest."""

    def __init__(self, label: str, open_port: Callable[[], Any], close_port: Callable[[], None],
                 hang_timeout_s: float) -> None:
        self.label = label
        self._open_port, self._close_port = open_port, close_port
        self.hang_timeout_s = hang_timeout_s
        self.channel: AgentChannel | None = None
        self.lock = threading.Lock()
        self.fresh_boot_wanted = False      # ChannelTarget's flag; a board keeps its /tmp
        self._stop = threading.Event()
        self._pumps: list[threading.Thread] = []

    def connect(self) -> None:
        """Open the port and wait for the agent's heartbeat. TargetError when none comes (the board
        is off, still booting, or nothing serves the line)."""
        self.drop()
        try:
            port = self._open_port()
        except Exception as e:  # noqa: BLE001 - pyserial, rfc2217 and socket failures alike
            raise TargetError(f"cannot open the serial line of {self.label}: {e}") from None
        port.timeout = READ_TIMEOUT_S
        ours, theirs = socket.socketpair()
        self._stop.clear()
        self._pumps = [threading.Thread(target=self._to_host, args=(port, theirs), daemon=True,
                                        name="serial-to-host"),
                       threading.Thread(target=self._to_board, args=(port, theirs), daemon=True,
                                        name="serial-to-board")]
        for pump in self._pumps:
            pump.start()
        self.channel = AgentChannel(ours, name="serial")
        deadline = time.monotonic() + HEARTBEAT_WAIT_S
        while self.channel.last_tick_ns is None and not self.channel.ready.is_set():
            if self.channel.closed.is_set() or time.monotonic() > deadline:
                self.drop()
                raise TargetError(f"the probe's agent does not answer on the serial line of {self.label} "
                                  f"(no heartbeat within {HEARTBEAT_WAIT_S:g} s): start "
                                  "`rtvb-probe agent --channel /dev/<its tty>` on the board, e.g. from its "
                                  "init, or check the line's speed")
            time.sleep(0.05)

    def _to_host(self, port, sock: socket.socket) -> None:
        try:
            while not self._stop.is_set():
                data = port.read(max(1, port.in_waiting))
                if data:
                    sock.sendall(data)
        except Exception:  # noqa: BLE001 - the port or the pair went: the channel then sees the end
            pass
        finally:
            try:
                sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def _to_board(self, port, sock: socket.socket) -> None:
        try:
            while True:
                data = sock.recv(1 << 16)
                if not data:
                    break
                port.write(data)
        except Exception:  # noqa: BLE001 - as above
            pass

    def problem(self, hang: bool = True) -> str | None:
        """Why the board cannot serve commands now, or None."""
        if self.channel is None:
            return "its serial line is not connected"
        if self.channel.closed.is_set():
            return f"its serial line closed ({self.channel.close_reason})"
        if hang and self.channel.silence_s() > self.hang_timeout_s:
            return (f"its agent sent no heartbeat for {self.hang_timeout_s:g} s (hang_timeout_s): the "
                    "board hangs, rebooted or lost power")
        return None

    def lost(self, during: str, why: str | None = None) -> TargetLost:
        why = why or self.problem() or "it stopped answering"
        log = "\n".join(self.channel.logs) if self.channel is not None else ""
        self.drop()
        return TargetLost(f"{self.label} was lost during {during}: {why}; it is reached again for the "
                          "next command.", log)

    def drop(self) -> None:
        """Close the channel and the port; idempotent."""
        channel, self.channel = self.channel, None
        self._stop.set()
        if channel is not None:
            channel.close()
        for pump in self._pumps:
            pump.join(2 * READ_TIMEOUT_S + 1)
        if self._pumps:
            self._close_port()
        self._pumps = []


class SerialBoardTarget(ChannelTarget):
    """Commands on a board through its serial line. The probe is the one serving the line: it is
    run as /proc/<the agent's pid>/exe, so nothing has to be copied over a slow line."""

    kind = "serial"

    def __init__(self, name: str, line: SerialLine) -> None:
        super().__init__(name, None)
        self.line = line
        self._probe: str | None = None
        self._version: str | None = None

    def _guest(self) -> SerialLine:
        if self.line.channel is None:
            try:
                self.line.connect()
            except TargetError as e:
                raise TargetLost(str(e) + ".") from None
        return self.line

    def _guest_record(self) -> SerialLine:
        return self.line

    def deploy_probe(self) -> str:
        if self.line.problem() is not None:
            self.line.connect()
        # `read` is served by the agent itself: its /proc/self is the agent.
        pid = self.read_file("/proc/self/stat").split(" ", 1)[0]
        probe = f"/proc/{pid}/exe"
        out: list[str] = []
        done = self.run([probe, "--version"], out.append)
        if done.returncode != 0 or not out:
            raise TargetError(f"the probe serving the serial line of {self.line.label} does not run as "
                              f"{probe} (status {done.returncode}: {done.stderr.strip() or 'no message'}).")
        words = out[0].split()          # "rtvb-probe 0.1.0 (schema 1)"
        self._probe, self._version = probe, words[1] if len(words) > 1 else out[0]
        return probe

    def remove_dir(self, path: str) -> None:
        self.run(["/bin/rm", "-rf", "--", path], lambda line: None)

    def check_program(self, program: str) -> str | None:
        return program_problem(program)

    def describe(self) -> dict[str, Any]:
        hostname = self.read_file("/proc/sys/kernel/hostname").strip()
        return {"hostname": hostname, "probe_version": self._version}

    def close(self) -> None:
        # No `poweroff`: under `rtvb-probe agent` it ends the agent, and the board would no
        # longer answer on its line.
        self.line.drop()
