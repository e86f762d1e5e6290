"""The interface every target offers the runner, and the registry of target kinds.

Modelled on labgrid's separation of concerns: a target knows how to reach one
environment (here, there, in a VM, on a board) and nothing about campaigns; the
runner knows campaigns and nothing about how a machine is reached.
"""

from __future__ import annotations

import os
import select
import threading
import time
from abc import ABC, abstractmethod
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import IO, Any, Callable, ClassVar, Iterable, TypeVar

from rtvbench.errors import TargetError
from rtvbench.params import StrictModel
from rtvbench.registry import Registry
from rtvbench.targets import shm as shm_regions

T = TypeVar("T")

TARGETS: Registry[type["Target"]] = Registry("target")


PROBE_STOP_GRACE_S = 5.0    # after SIGINT, time for the probe to print its last records
#: after the SIGTERM a command gets at its deadline, the time it has to end before SIGKILL
KILL_GRACE_S = 5.0
#: after that SIGKILL, how long the host still takes the output in before it stops reading: what
#: holds the output open then is out of reach (a process that left the group, a stuck connection)
ABANDON_AFTER_KILL_S = 3.0
_WATCH_POLL_S = 0.5         # a deadline may be brought forward at any time

#: the machine rtvbench itself runs on, which a local environment and every qemu guest occupy
THIS_MACHINE = "this machine"


class Deadline:
    """When a command run by Target.run must have ended. At `due` (time.monotonic()) its whole
    process group is sent SIGTERM, KILL_GRACE_S later SIGKILL, and ABANDON_AFTER_KILL_S after that
    the host stops reading its output. The runner may bring it forward (a probe that printed its
    `end` record has nothing left to do but exit)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.due = time.monotonic() + seconds

    def bring_forward(self, seconds: float) -> None:
        self.due = min(self.due, time.monotonic() + seconds)


class Watch:
    """A command's progress against its Deadline (none: it may take as long as it takes), for the
    loop of a target that takes its output in: tick() sends what is due, terminate() then kill(),
    and says when to stop waiting for the command."""

    def __init__(self, deadline: Deadline | None, terminate: Callable[[], None],
                 kill: Callable[[], None]) -> None:
        self.deadline = deadline
        self._terminate, self._kill = terminate, kill
        self.sent = 0               # 1: SIGTERM sent, 2: SIGKILL too

    @property
    def overdue(self) -> bool:
        return self.sent > 0

    def tick(self) -> bool:
        """Signal the command as its deadline says; True once the host should stop waiting."""
        if self.deadline is None:
            return False
        now = time.monotonic()
        if self.sent == 0 and now >= self.deadline.due:
            self.sent = 1
            self._terminate()
        if self.sent == 1 and now >= self.deadline.due + KILL_GRACE_S:
            self.sent = 2
            self._kill()
        return self.sent == 2 and now >= self.deadline.due + KILL_GRACE_S + ABANDON_AFTER_KILL_S

    def wait_s(self) -> float | None:
        """How long the caller may block before the next tick()."""
        return None if self.deadline is None else _WATCH_POLL_S


def drain_or_stop(drain: Callable[[], T], ask_stop: Callable[[], None],
                  kill_after: Callable[[float], Callable[[], None]]) -> tuple[T, bool]:
    """How every target runs a command to its end and stops it on Ctrl-C: drain() hands its lines
    to the caller until it ends. On KeyboardInterrupt the command is asked to stop (the probe then
    prints its results so far and `end`), drained again, and killed if it has not ended within
    PROBE_STOP_GRACE_S: kill_after(seconds) arms that and returns what disarms it. Returns what the
    last drain returned and whether the command was interrupted."""
    try:
        return drain(), False
    except KeyboardInterrupt:
        ask_stop()
        disarm = kill_after(PROBE_STOP_GRACE_S)
        try:
            return drain(), True
        finally:
            disarm()


#: A line longer than this reaches on_line in pieces of this size, as the guest agent forwards one:
#: output without a newline (a hostile tool, a probe gone wrong) never holds more than this in
#: memory, and the piece is refused where lines are checked (the probe's records are far shorter,
#: a command's stdout has a limit of its own).
LINE_PIECE_BYTES = 16 << 20


def capped_lines(stream: IO[bytes], limit: int = LINE_PIECE_BYTES) -> Iterable[bytes]:
    """The lines of a binary stream, each at most `limit` bytes (a longer one comes in pieces)."""
    return iter(lambda: stream.readline(limit), b"")


def arrived_together(on_line: Callable[[str], None]) -> AbstractContextManager:
    """The block in which a drain hands on_line the lines of one read of a command's output. An
    on_line that stores each line as it arrives may store these in one transaction (its `together`
    method): they arrived at the same moment, so a crash loses all of them or none either way. Any
    other on_line takes them one by one as ever."""
    together = getattr(on_line, "together", None)
    return together() if together is not None else nullcontext()


def watched_drain(stream: IO[bytes], on_line: Callable[[str], None], watch: Watch) -> Callable[[], None]:
    """drain_or_stop's drain for a command's stdout pipe under a Watch: every line to on_line until
    the pipe ends, or until the watch gives up on the command (its output may be held open by a
    process it left behind). Re-entrant after a KeyboardInterrupt: a partial line is kept."""
    fd = stream.fileno()
    pending = bytearray()

    def drain() -> None:
        while not watch.tick():
            ready, _, _ = select.select([fd], [], [], watch.wait_s())
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            pending.extend(chunk)
            with arrived_together(on_line):
                while (end := pending.find(b"\n")) >= 0:
                    line = bytes(pending[:end])
                    del pending[:end + 1]
                    on_line(line.decode("utf-8", "replace"))
                while len(pending) >= LINE_PIECE_BYTES:
                    line = bytes(pending[:LINE_PIECE_BYTES])
                    del pending[:LINE_PIECE_BYTES]
                    on_line(line.decode("utf-8", "replace"))
        if pending:
            line = bytes(pending)
            pending.clear()
            on_line(line.decode("utf-8", "replace"))
    return drain


def kill_timer(kill: Callable[[], None]) -> Callable[[float], Callable[[], None]]:
    """drain_or_stop's kill_after for a command killed from this process: a timer thread."""
    def arm(seconds: float) -> Callable[[], None]:
        timer = threading.Timer(seconds, kill)
        timer.start()
        return timer.cancel
    return arm


#: the bound on a command that answers at once (a file read, the probe's sysinfo or --version),
#: generous for an emulated guest on a loaded machine
QUICK_COMMAND_DEADLINE_S = 120.0


def not_regular_file(path: str, environment: str) -> str:
    return (f"{path} in environment {environment} is not a regular file (a symbolic link, FIFO, device "
            "or directory), so it was not read.")


def file_too_large(path: str, environment: str, max_bytes: int) -> str:
    return (f"{path} in environment {environment} holds more than the {max_bytes} bytes read at most, "
            "so it was not read.")


@dataclass
class Completed:
    """How a foreground command ended."""

    returncode: int
    stderr: str             # its diagnostics (tail), for error messages
    interrupted: bool = False   # we stopped it because the user pressed Ctrl-C
    #: it outlived the Deadline it was run with: it was sent SIGTERM, then SIGKILL after KILL_GRACE_S
    #: if it still ran (`killed`), and its output may be cut short
    overdue: bool = False
    killed: bool = False


def drain_lines(stream: IO[bytes], on_line: Callable[[str], None],
                failed: Callable[[str], None]) -> None:
    """Hand every line of a background command's stdout to on_line until the stream ends.

    When on_line raises, `failed` gets the reason (at once: a load that cannot be stored is
    reported while it starts) and the rest is read and dropped: a writer blocked on a full pipe
    would stall the load."""
    broken = False
    for raw in capped_lines(stream):
        if broken:
            continue
        try:
            on_line(raw.decode("utf-8", "replace").rstrip("\n"))
        except Exception as e:  # noqa: BLE001 - reported through failed(), not lost in a thread
            broken = True
            failed(str(e) or e.__class__.__name__)


class Background(ABC):
    """A command running in the background (a load), with everything it spawns."""

    argv: list[str]

    @abstractmethod
    def poll(self) -> int | None:
        """Its exit status if it has ended on its own, else None."""

    @abstractmethod
    def stop(self) -> None:
        """End it and every process it started; idempotent."""

    @abstractmethod
    def output_tail(self) -> str:
        """The end of what it printed, to explain why it ended early (its stderr only, when
        its stdout is streamed to an on_line callback)."""

    def failure(self) -> str | None:
        """Why its streamed output could not be taken in (the on_line callback raised), or None.
        The command keeps running either way: a load is never left blocked on a full pipe."""
        return None



class FedBackground(Background):
    """A background command that reads lines rtvbench writes to its stdin, and ends at its end."""

    @abstractmethod
    def send(self, line: str) -> None:
        """Write `line` and a newline to its stdin, at once. Raises TargetError when it cannot take
        it (it ended)."""

class Target(ABC):
    kind: ClassVar[str]
    Params: ClassVar[type[StrictModel]]     # campaign keys of the environment, without `target`

    def __init__(self, name: str, params: StrictModel) -> None:
        self.name = name            # the environment's name in the campaign
        self.params = params

    @abstractmethod
    def deploy_probe(self) -> str:
        """Make the probe available on the target; return the path to run it by.
        Raises TargetError when that is impossible."""

    @abstractmethod
    def run(self, argv: list[str], on_line: Callable[[str], None],
            deadline: Deadline | None = None) -> Completed:
        """Run argv to completion, calling on_line for every stdout line as it arrives.

        On KeyboardInterrupt the command is asked to stop (SIGINT), its remaining
        lines are still delivered, and the result says `interrupted`: the caller
        decides what an interruption means. An exception raised by on_line kills
        the command and propagates. With a deadline, a command still running at its
        `due` is stopped with its process group as Deadline says, and the result
        says `overdue` (and `killed` when it took SIGKILL)."""

    @abstractmethod
    def start_background(self, argv: list[str], on_line: Callable[[str], None] | None = None, *,
                         alone: bool = False) -> Background:
        """Start argv in the background, in its own process group.

        With on_line, every stdout line is handed to it as it arrives (from another thread),
        up to and including the last lines printed while stop() ends the command: stop()
        returns only once they have all been delivered. `alone`: the command starts no process of
        its own, so a target may spare it what stops the processes a command leaves behind."""

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """What this target is, for the store and the report (kind, host ...)."""

    def close(self) -> None:
        """Release what the target holds (connections, guests, deployed files); idempotent.
        The runner calls it once the campaign run ends, however it ends."""

    def read_file(self, path: str) -> str:
        """The text of a file on the target (e.g. /proc/stat). This default runs `cat` there, so
        any target that can run a command can read a file; targets with a cheaper way override it.
        Raises TargetError when the file cannot be read."""
        lines: list[str] = []
        done = self.run(["cat", "--", path], lines.append)
        if done.returncode != 0 or done.interrupted:
            raise TargetError(f"cannot read {path} in environment {self.name} "
                              f"(cat exited with status {done.returncode}: {done.stderr.strip() or 'no message'}).")
        return "".join(line + "\n" for line in lines)

    def read_regular_file(self, path: str, max_bytes: int) -> str | None:
        """The text of `path` on the target if it is a regular file of at most max_bytes, None if
        nothing is there. Raises TargetError (not_regular_file, file_too_large) for anything else,
        unread: a symbolic link (to /dev/zero, say), a FIFO, a device or a directory would hang
        the reader or fill its memory. This default runs a POSIX sh check there, under a Deadline."""
        script = ('[ -e "$1" ] || [ -L "$1" ] || exit 2; [ -f "$1" ] && [ ! -L "$1" ] || exit 3; '
                  'n=$(wc -c <"$1") || exit 1; [ "$n" -le "$2" ] || exit 4; '
                  'exec head -c "$2" -- "$1"')
        lines: list[str] = []
        done = self.run(["sh", "-c", script, "rtvb-read", path, str(max_bytes)], lines.append,
                        Deadline(QUICK_COMMAND_DEADLINE_S))
        if done.returncode == 2:
            return None
        if done.returncode == 3:
            raise TargetError(not_regular_file(path, self.name))
        if done.returncode == 4:
            raise TargetError(file_too_large(path, self.name, max_bytes))
        if done.returncode != 0 or done.interrupted or done.overdue:
            raise TargetError(f"cannot read {path} in environment {self.name} (status {done.returncode}: "
                              f"{done.stderr.strip() or 'no message'}).")
        return "".join(line + "\n" for line in lines)

    def remove_dir(self, path: str) -> None:
        """Remove a directory tree on the target (what a killed load generator left behind).
        This default runs `rm -rf` there; a failure is not an error (nothing to clean up)."""
        self.run(["rm", "-rf", "--", path], lambda line: None)

    def machine(self) -> str:
        """The machine this environment occupies, known without connecting: two measurements overlap
        in a run only when the machines they involve are disjoint. This machine (THIS_MACHINE), unless
        the target reaches another one, which then says which (an ssh board, a lab place)."""
        return THIS_MACHINE

    def slowdown(self) -> float:
        """How many times longer than on real hardware a workload may take here, for the watchdog
        (Benchmark.deadline_s): 1, unless the target emulates its machine."""
        return 1.0

    #: the target kinds this kind can reach for round trips (the `ipc` benchmark's `peer`)
    reaches: tuple[str, ...] = ()

    def shm_region(self) -> str | None:
        """The shared-memory region this environment maps (the ipc transport "shm"), or None.
        targets/shm.py says which environments reach each other through one."""
        return None

    def round_trip_problem(self, peer: "Target", transport: str = "tcp") -> str | None:
        """Why this environment cannot reach a server in environment `peer` over `transport`, as
        known from the two targets alone (`validate` asks before anything is connected), or None."""
        if transport == "shm":
            return shm_regions.problem(self, peer)
        if peer is self or peer.kind in self.reaches:
            return None
        return (f"environment {peer.name} cannot be reached for round trips from {self.name} "
                f"(a {self.kind} target cannot reach a {peer.kind} one); measure round trips "
                "between local and ssh environments, or between qemu environments with `network = true` "
                "and local or other such qemu ones, or drop `peer` from the ipc benchmark")

    def round_trip_address(self, peer: "Target") -> str:
        """The numeric IP address at which this environment reaches a server that listens on every
        address in environment `peer` (`peer` may be this target: then its loopback). For the `ipc`
        benchmark's `peer`; the probe cannot resolve names (a static binary has no NSS).
        Raises TargetError when the two cannot be joined."""
        raise TargetError(f"{self.round_trip_problem(peer) or 'no way to join them is known'}.")

    def network_namespace(self) -> str | None:
        """The network namespace on this machine that this environment's network lies in (a qemu
        guest's with `network = true`), or None."""
        return None

    def round_trip_command(self, other: "Target", argv: list[str]) -> list[str]:
        """argv as it runs here as one end of round trips with environment `other`: argv itself,
        unless this end must first enter the network the two share (a local end of round trips
        with a guest runs in the guests' namespace)."""
        return argv

    def check_program(self, program: str) -> str | None:
        """At validation time: why `program` cannot run on this target, or None.
        Targets that cannot tell before connecting keep this default."""
        return None

    def known_cpus(self) -> list[int] | None:
        """At validation time: the CPUs the probe may run on here, or None.
        Targets that cannot tell before connecting keep this default (the run checks their fingerprint)."""
        return None
