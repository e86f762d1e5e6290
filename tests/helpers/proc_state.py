"""What a running probe is doing, read from /proc and the kernel's socket table, so that a test can
wait for a state (asleep on a deadline, blocked in poll, N bytes received) instead of for a time; and
the rest of its output once the test has read some of it line by line."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def threads(pid: int) -> list[int]:
    """Thread ids of a live process, its main thread (tid = pid) first."""
    try:
        others = sorted(int(t) for t in os.listdir(f"/proc/{pid}/task") if int(t) != pid)
    except OSError:
        return []
    return [pid, *others]


def wchan(pid: int, tid: int | None = None) -> str:
    """The kernel function a thread sleeps in ("" while it runs or once it is gone)."""
    text = _read(f"/proc/{pid}/task/{tid or pid}/wchan").strip()
    return "" if text == "0" else text


def asleep_on_a_timer(pid: int, tid: int | None = None) -> bool:
    """The thread is blocked in clock_nanosleep / nanosleep."""
    return "nanosleep" in wchan(pid, tid)


def thread_cpu_ns(pid: int, tid: int) -> int:
    """CPU time a thread has used, in ns (first field of its schedstat); 0 once it is gone."""
    fields = _read(f"/proc/{pid}/task/{tid}/schedstat").split()
    return int(fields[0]) if fields else 0


def poll_nfds(pid: int) -> int | None:
    """The number of descriptors a single-threaded process is blocked polling on (poll or ppoll: the
    count is the second argument of both), or None when it is elsewhere."""
    fields = _read(f"/proc/{pid}/syscall").split()
    if len(fields) < 3 or fields[0] not in _POLL_SYSCALLS.get(os.uname().machine, ()):
        return None
    return int(fields[2], 16)


_POLL_SYSCALLS = {"x86_64": ("7", "271"), "aarch64": ("73",), "riscv64": ("73",), "armv7l": ("168", "336")}


def tcp_bytes_received(pid: int) -> int:
    """Bytes the established TCP sockets of a process have received (the kernel's tcp_info, as `ss`
    prints it): a count the process cannot be ahead of, however the scheduler ran it."""
    out = subprocess.run(["ss", "-tinpH", "state", "established"], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    total, mine = 0, False
    for line in out.splitlines():
        if not line[:1].isspace():           # a socket's first line names its owners
            mine = f"pid={pid}," in line
        elif mine:
            for word in line.split():
                if word.startswith("bytes_received:"):
                    total += int(word.split(":", 1)[1])
    return total


def read_to_end(proc: subprocess.Popen, timeout: float) -> str:
    """The rest of a process's stdout, after lines the test already read with readline(), and its
    exit. Not communicate(): it reads the descriptor itself, skipping whatever the file object read
    ahead with the last line (records the process printed right after it). `timeout` is a hang
    guard: the process is killed after it."""
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    try:
        out = proc.stdout.read()
        proc.wait()
    finally:
        timer.cancel()
    return out
