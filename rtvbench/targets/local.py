"""The `local` target: the machine rtvbench itself runs on."""

from __future__ import annotations

import atexit
import ctypes
import errno
import os
import platform
import select
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

from rtvbench.probe import binary as probe
from rtvbench.errors import TargetError
from rtvbench.params import StrictModel
from rtvbench.procstat import mark_own, parse_process_stat
from rtvbench.targets.base import (TARGETS, Background, Completed, Deadline, FedBackground, Target, Watch,
                                   drain_lines, drain_or_stop, file_too_large, kill_timer, not_regular_file,
                                   watched_drain)
from rtvbench.targets.capabilities import FeedsBackground, ProcessListing

SUPERVISOR = Path(__file__).with_name("local_supervisor.py")
STOP_GRACE_S = 2.0          # SIGTERM -> SIGKILL delay for loads
PR_SET_PDEATHSIG = 1

_libc = ctypes.CDLL(None, use_errno=True)
#: more than a /proc/<pid>/stat line holds (52 numbers and a name of at most 64 bytes)
_PROC_STAT_MAX = 4096
_running: set["LocalBackground"] = set()


def _die_with_parent() -> None:
    """preexec_fn of a command: the kernel kills it if rtvbench dies, so a killed
    runner never leaves a real-time thread spinning on the machine."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _dying_with_us(argv: list[str], probe_path: str | None) -> dict[str, Any]:
    """How a command is started to die with rtvbench. The probe does it itself when RTVB_DIE_WITH
    names its parent: a preexec_fn makes Python fork the whole interpreter (about 6 ms) where it
    would otherwise vfork (under 1 ms), before every measurement. Any other command gets the
    preexec_fn."""
    if probe_path is not None and argv and argv[0] == probe_path:
        return {"env": {**os.environ, "RTVB_DIE_WITH": str(os.getpid())}}
    return {"preexec_fn": _die_with_parent}


def _tail(f, limit: int = 4000) -> str:
    f.seek(0, os.SEEK_END)
    size = f.tell()
    f.seek(max(0, size - limit))
    return f.read().decode("utf-8", "replace").strip()


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass        # nothing left in it (PermissionError: only a zombie leader, on some kernels)


class _ExitWaiter:
    """Waits for child `pid` to exit without reaping it. A pidfd is readable from the moment the
    child exits, so the wait ends then rather than at the next poll: it lies between every two
    measurements. Kernels before 5.3 have no pidfd: polled there."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        try:
            self.fd = os.pidfd_open(pid)
        except ProcessLookupError:
            self.fd = -2                # reaped already
        except OSError:
            self.fd = -1

    def exited(self, within_s: float) -> bool:
        if self.fd == -2:
            return True
        if self.fd >= 0:
            return bool(select.select([self.fd], [], [], within_s)[0])
        if os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            return True
        time.sleep(within_s)
        return False

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
        self.fd = -2


def _wait_unreaped(pid: int, watch: Watch) -> None:
    """Wait until child `pid` has exited, leaving it to be reaped (its process group number stays
    its own meanwhile), or until the watch gives up on it."""
    waiter = _ExitWaiter(pid)
    try:
        while not watch.tick():
            if waiter.exited(0.01 if watch.wait_s() is None else min(0.05, watch.wait_s())):
                return
    finally:
        waiter.close()


class LocalParams(StrictModel):
    pass


class LocalBackground(FedBackground):
    """A load command under local_supervisor.py (see there for why), or a command that starts no
    process of its own (`alone`: the thermal sampler) without it: such a command dies with the
    runner as the probe does in the foreground, and stop() ends it alone, without the supervisor's
    Python start-up (10-20 ms before the measurement). `fed` (with `alone`): its stdin is a pipe
    that send() writes to and stop() closes.

    Without on_line, stdout and stderr go to one temporary file (output_tail). With on_line,
    stdout is a pipe read line by line by a thread of ours, and stderr alone goes to the file."""

    READER_JOIN_S = 5.0     # after the supervisor ended, every writer of the pipe is gone

    def __init__(self, argv: list[str], on_line: Callable[[str], None] | None = None, *,
                 alone: bool = False, probe_path: str | None = None, fed: bool = False) -> None:
        self.argv = argv
        import tempfile     # here and below: validate imports this module for its parameters alone
        self._out = tempfile.TemporaryFile()
        self._reader: threading.Thread | None = None
        self._failure: str | None = None
        self._alone = alone
        # Non-inheritable: only the supervisor gets read_end.
        read_end, self._watch = ((subprocess.PIPE if fed else subprocess.DEVNULL), -1) if alone else os.pipe()
        out_r = out_w = -1
        if on_line is not None:
            out_r, out_w = os.pipe()
        try:
            self._proc = subprocess.Popen(
                argv if alone else [sys.executable, "-I", "-S", str(SUPERVISOR), str(STOP_GRACE_S), "--", *argv],
                stdin=read_end, stdout=self._out if on_line is None else out_w,
                stderr=subprocess.STDOUT if on_line is None else self._out,
                start_new_session=True, **(_dying_with_us(argv, probe_path) if alone else {}))
        except BaseException:
            if out_r >= 0:
                os.close(out_r)
            raise
        finally:
            if not alone:
                os.close(read_end)
            if out_w >= 0:
                os.close(out_w)     # the supervisor and the command hold the only write ends now
        _running.add(self)
        if on_line is not None:
            self._reader = threading.Thread(target=self._read, args=(out_r, on_line), daemon=True,
                                            name=f"load-output-{self._proc.pid}")
            self._reader.start()

    def _read(self, fd: int, on_line: Callable[[str], None]) -> None:
        with os.fdopen(fd, "rb") as f:
            drain_lines(f, on_line, self._failed)

    def _failed(self, why: str) -> None:
        self._failure = why

    def poll(self) -> int | None:
        return self._proc.poll()

    def send(self, line: str) -> None:
        if self._proc.stdin is None:
            raise TargetError(f"{self.argv[0]} takes no input from rtvbench.")
        try:
            self._proc.stdin.write(line.encode() + b"\n")
            self._proc.stdin.flush()
        except (OSError, ValueError):        # it ended (EPIPE), or stop() closed the pipe
            raise TargetError(f"{self.argv[0]} ended; it takes no more input.") from None

    def stop(self) -> None:
        if self._proc.stdin is not None:
            try:
                self._proc.stdin.close()        # a fed command ends at the end of its input
            except OSError:
                pass                            # it ended first: the pipe had no reader
        if self._proc.poll() is None:
            waiter = _ExitWaiter(self._proc.pid)
            self._proc.send_signal(signal.SIGTERM)
            # Popen.wait(timeout) polls with growing sleeps (7 ms past a 4 ms stop).
            # The supervisor has STOP_GRACE_S of its own before it kills the group.
            deadline = time.monotonic() + STOP_GRACE_S + (0 if self._alone else 3)
            while not waiter.exited(max(0.0, min(0.05, deadline - time.monotonic()))):
                if time.monotonic() >= deadline:
                    break
            waiter.close()
            if self._proc.poll() is None:
                # The supervisor itself is stuck, or the command alone ignored SIGTERM: kill its group
                # the hard way.
                try:
                    os.killpg(self._proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self._proc.wait()
        if self._watch >= 0:
            os.close(self._watch)
            self._watch = -1
        if self._reader is not None:
            # The command's last lines (a load's final window, result and end) are printed while
            # it stops; they are delivered before stop() returns.
            self._reader.join(self.READER_JOIN_S)
            self._reader = None
        _running.discard(self)

    def output_tail(self) -> str:
        return _tail(self._out)

    def failure(self) -> str | None:
        return self._failure


@atexit.register
def _stop_all() -> None:
    # Exit paths that skip the runner's finally blocks (sys.exit from a signal
    # handler, an unexpected exception) still stop every load.
    for bg in list(_running):
        bg.stop()


@TARGETS.register("local")
class LocalTarget(Target, ProcessListing, FeedsBackground):
    kind = "local"
    Params = LocalParams

    _probe: str | None = None       # the probe deploy_probe handed out

    def deploy_probe(self) -> str:
        self._probe = str(probe.locate_probe())
        return self._probe

    def process_ticks(self) -> dict[str, list] | None:
        return local_process_ticks()

    def run(self, argv: list[str], on_line: Callable[[str], None],
            deadline: Deadline | None = None) -> Completed:
        import tempfile
        with tempfile.TemporaryFile() as err:
            try:
                proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=err, start_new_session=True, **_dying_with_us(argv, self._probe))
            except OSError as e:
                return Completed(127, f"cannot start {argv[0]}: {e.strerror}")
            # Its own session: the group is the command and all it starts that did not leave it.
            watch = Watch(deadline, lambda: _signal_group(proc.pid, signal.SIGTERM),
                          lambda: _signal_group(proc.pid, signal.SIGKILL))
            try:
                # Ctrl-C reaches only us, and we ask the command to stop.
                _, interrupted = drain_or_stop(watched_drain(proc.stdout, on_line, watch),
                                               lambda: proc.send_signal(signal.SIGINT), kill_timer(proc.kill))
                _wait_unreaped(proc.pid, watch)
            finally:
                # Whatever it left behind in its group goes with it. Its leader is not reaped yet,
                # so the group's number cannot belong to anything else.
                _signal_group(proc.pid, signal.SIGKILL)
                returncode = proc.wait()
                proc.stdout.close()
            stderr = _tail(err)
        return Completed(returncode, stderr, interrupted, overdue=watch.overdue, killed=watch.sent == 2)

    def start_background(self, argv: list[str], on_line: Callable[[str], None] | None = None, *,
                         alone: bool = False) -> Background:
        return LocalBackground(argv, on_line, alone=alone, probe_path=self._probe)

    def start_fed_background(self, argv: list[str], on_line: Callable[[str], None]) -> FedBackground:
        return LocalBackground(argv, on_line, alone=True, probe_path=self._probe, fed=True)

    def read_file(self, path: str) -> str:
        # Direct: no process to start between the probe's end and the sample.
        try:
            return Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError as e:
            raise TargetError(f"cannot read {path} on this machine ({e.strerror}).") from None

    def read_regular_file(self, path: str, max_bytes: int) -> str | None:
        # O_NOFOLLOW refuses a symbolic link, O_NONBLOCK keeps a FIFO from blocking the open; what
        # opened is checked before a byte is read.
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise TargetError(not_regular_file(path, self.name)) from None
            raise TargetError(f"cannot read {path} on this machine ({e.strerror}).") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise TargetError(not_regular_file(path, self.name))
            if info.st_size > max_bytes:
                raise TargetError(file_too_large(path, self.name, max_bytes))
            data = bytearray()     # read to its end all the same: a file may grow after fstat
            while len(data) <= max_bytes and (chunk := os.read(fd, 1 << 20)):
                data.extend(chunk)
        finally:
            os.close(fd)
        if len(data) > max_bytes:
            raise TargetError(file_too_large(path, self.name, max_bytes))
        return data.decode("utf-8", "replace")

    def remove_dir(self, path: str) -> None:
        import shutil
        shutil.rmtree(path, ignore_errors=True)

    def describe(self) -> dict[str, Any]:
        # rtvbench_host: this machine's memory and CPUs are shared with rtvbench and all else it runs.
        return {"target": "local", "hostname": socket.gethostname(), "arch": platform.machine(),
                "rtvbench_host": True}

    reaches = ("local", "ssh", "qemu")

    def round_trip_problem(self, peer: Target, transport: str = "tcp") -> str | None:
        if peer.kind == "qemu" and transport != "shm":
            return peer.round_trip_problem(self, transport)    # whether the guest has a network
        return super().round_trip_problem(peer, transport)

    def round_trip_address(self, peer: Target) -> str:
        if peer.kind == "local":
            return "127.0.0.1"          # every local environment is this machine
        if peer.kind == "ssh":
            return peer.resolved_host_address()
        if peer.kind == "qemu" and not self.round_trip_problem(peer):
            return peer.guest_address()
        return super().round_trip_address(peer)

    def round_trip_command(self, other: Target, argv: list[str]) -> list[str]:
        # A guest's network exists only inside its namespace: this end joins it there, and the
        # traffic never leaves it.
        ns = other.network_namespace() if other is not self else None
        return ["ip", "netns", "exec", ns, *argv] if ns else argv

    def known_cpus(self) -> list[int] | None:
        return sorted(os.sched_getaffinity(0))

    def check_program(self, program: str) -> str | None:
        import shutil
        if shutil.which(program) is None:
            where = "is not an executable file" if "/" in program else "is not found on PATH"
            return f'program "{program}" {where}: install it or fix the command'
        return None


def local_process_ticks() -> dict[str, list]:
    """This machine's processes from /proc/<pid>/stat (proc(5)): name, utime + stime, last CPU, and
    1 for rtvbench's own (this process and everything it started: the probe, the loads and their
    workers), else 0 — what is not the campaign's is foreign to the measurement."""
    out: dict[str, list] = {}
    parents: dict[str, str] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        # os.open and one read rather than a text file object: this runs twice between every two
        # measurements, over every process of the machine (0.9 ms instead of 1.5 for a hundred).
        try:
            fd = os.open(f"/proc/{entry.name}/stat", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue                    # it ended meanwhile
        try:
            raw = os.read(fd, _PROC_STAT_MAX)
        except OSError:
            continue
        finally:
            os.close(fd)
        parsed = parse_process_stat(raw.decode("utf-8", "replace"))
        if parsed:
            pid, name, ticks, cpu, ppid = parsed
            out[pid] = [name, ticks, cpu]
            parents[pid] = ppid
    return mark_own(out, parents, {str(os.getpid())})
