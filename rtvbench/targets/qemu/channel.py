"""The host side of the rtvb-probe agent protocol (v1; described in
docs/targets/qemu.md): the client that a qemu guest's /init serves.

One reader thread owns the channel's input. It sorts every guest line into the queue of the
command it belongs to (by id), notes the time of every line (a `tick` at least once a second
proves the guest alive) and keeps the agent's own `log` lines. Callers wait on their command's
queue with a timeout and decide, between two waits, whether the guest is still there: the
channel knows nothing about QEMU or timeouts.
"""

from __future__ import annotations

import collections
import queue
import socket
import threading
import time
from dataclasses import dataclass

from rtvbench.targets.base import LINE_PIECE_BYTES, capped_lines


class ChannelClosed(Exception):
    """The channel ended (the guest powered off, crashed or was killed)."""


@dataclass
class Event:
    kind: str               # "out", "err", "exit", or "closed" when the channel ended first
    text: str = ""
    status: int | None = None


CLOSED = Event("closed")


def encode_arg(arg: str | bytes) -> str:
    raw = arg.encode() if isinstance(arg, str) else arg
    return raw.hex() if raw else "-"


class Command:
    """A command (or a `read`) running in the guest, as seen by the host."""

    def __init__(self, channel: "AgentChannel", cid: int, argv: list[str]) -> None:
        self.channel = channel
        self.id = cid
        self.argv = argv
        self.events: queue.SimpleQueue[Event] = queue.SimpleQueue()
        self.status: int | None = None      # set when its `exit` arrives

    def next(self, timeout: float) -> Event | None:
        """Its next event, or None when none came within timeout."""
        try:
            return self.events.get(timeout=timeout)
        except queue.Empty:
            return None

    def signal(self, signum: int) -> None:
        self.channel.send(f"signal {self.id} {signum}")


class AgentChannel:
    """The protocol over one connected stream socket."""

    LOG_LINES = 200

    def __init__(self, sock: socket.socket, name: str = "agent") -> None:
        self.sock = sock
        self.name = name
        self._rfile = sock.makefile("rb", buffering=1 << 16)
        self._send_lock = threading.Lock()
        self._lock = threading.Lock()
        self._commands: dict[int, Command] = {}
        self._next_id = 1
        self.ready = threading.Event()
        self.version: str | None = None
        self.boottime_ns: int | None = None
        self.init_ns: int | None = None         # CLOCK_BOOTTIME when /init started
        self.ready_at: float | None = None      # host monotonic time `ready` arrived
        self.last_line = time.monotonic()
        self.last_tick_ns: int | None = None
        self.logs: collections.deque[str] = collections.deque(maxlen=self.LOG_LINES)
        self.closed = threading.Event()
        self.close_reason = ""
        self._reader = threading.Thread(target=self._read_loop, daemon=True, name=f"{name}-reader")
        self._reader.start()

    # -- input --------------------------------------------------------------

    def _read_loop(self) -> None:
        reason = "the channel reached end of file"
        try:
            # The agent forwards a long line in LINE_PIECE_BYTES pieces, each behind its short prefix.
            for raw in capped_lines(self._rfile, LINE_PIECE_BYTES + 256):
                self.last_line = time.monotonic()
                self._dispatch(raw.decode("utf-8", "replace").rstrip("\r\n"))
        except (OSError, ValueError) as e:
            reason = f"reading the channel failed ({e})"
        finally:
            self.close_reason = reason
            self.closed.set()
            with self._lock:
                waiting = list(self._commands.values())
                self._commands.clear()
            for cmd in waiting:
                cmd.events.put(CLOSED)

    def _dispatch(self, line: str) -> None:
        head, _, rest = line.partition(" ")
        if head == "tick":
            try:
                self.last_tick_ns = int(rest)
            except ValueError:
                self.logs.append(f"malformed tick: {line[:200]}")
            return
        if head == "ready":
            # "ready VERSION BOOTTIME_NS [INIT_NS]": INIT_NS only from /init (a probe as PID 1)
            self.ready_at = time.monotonic()     # here, not when a waiter looks: boot times
            version, *times = rest.split(" ")
            self.version = version
            try:
                self.boottime_ns = int(times[0])
                self.init_ns = int(times[1]) if len(times) > 1 else None
            except (ValueError, IndexError):
                self.boottime_ns = self.init_ns = None
            self.ready.set()
            return
        if head == "log":
            self.logs.append(rest)
            return
        kind, _, text = rest.partition(" ")
        try:
            cid = int(head)
        except ValueError:
            self.logs.append(f"unexpected line from the guest: {line[:200]}")
            return
        with self._lock:
            cmd = self._commands.get(cid)
            if cmd is not None and kind == "exit":
                del self._commands[cid]
        if cmd is None:
            return                  # a command the host already gave up on
        if kind == "exit":
            try:
                cmd.status = int(text)
            except ValueError:
                cmd.status = 255
            cmd.events.put(Event("exit", status=cmd.status))
        elif kind in ("out", "err"):
            cmd.events.put(Event(kind, text))
        else:
            self.logs.append(f"unexpected line from the guest: {line[:200]}")

    # -- output -------------------------------------------------------------

    def send(self, line: str) -> None:
        if self.closed.is_set():
            raise ChannelClosed(self.close_reason)
        data = (line + "\n").encode()
        try:
            with self._send_lock:
                self.sock.sendall(data)
        except OSError as e:
            raise ChannelClosed(f"writing to the channel failed ({e.strerror or e})") from None

    def _new(self, argv: list[str]) -> Command:
        with self._lock:
            cid = self._next_id
            self._next_id += 1
            cmd = Command(self, cid, argv)
            self._commands[cid] = cmd
        return cmd

    def _forget(self, cmd: Command) -> None:
        with self._lock:
            self._commands.pop(cmd.id, None)

    def start(self, argv: list[str]) -> Command:
        """`run`: argv[0] must be an absolute path in the guest."""
        cmd = self._new(argv)
        try:
            self.send(f"run {cmd.id} " + " ".join(encode_arg(a) for a in argv))
        except ChannelClosed:
            self._forget(cmd)
            raise
        return cmd

    def read(self, path: str) -> Command:
        """`read`: the file's lines arrive as `out` events, then `exit 0` (or `err`, `exit 1`)."""
        cmd = self._new(["read", path])
        try:
            self.send(f"read {cmd.id} {encode_arg(path)}")
        except ChannelClosed:
            self._forget(cmd)
            raise
        return cmd

    def poweroff(self) -> None:
        self.send("poweroff")

    def active(self) -> int:
        """How many commands have not ended yet."""
        with self._lock:
            return len(self._commands)

    def wait_ready(self, timeout: float) -> bool:
        return self.ready.wait(timeout)

    def silence_s(self) -> float:
        """Seconds since the guest last said anything."""
        return time.monotonic() - self.last_line

    def close(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self._reader.join(5)
        try:
            self._rfile.close()
        except OSError:
            pass
