"""What a QEMU guest costs the host: CPU time of its vCPU threads and of QEMU's other threads (device
emulation, I/O, the TCG translator's helpers), user and system apart, how long its vCPUs were kept
waiting for a host CPU, and QEMU's memory.

Read from /proc of the QEMU process (proc(5)): /proc/PID/task/TID/stat for the vCPU threads (their
ids come from QMP's query-cpus-fast at boot), /proc/PID/stat for the whole process, whose times
include the threads that have already exited (QEMU starts and ends worker threads); "other" is the
process less its vCPUs. Memory from /proc/PID/smaps_rollup: RSS counts every page the process maps,
PSS divides shared pages by their sharers, so PSS summed over guests is what they take together.
The shares are computed in rtvbench/run_analyses/host_usage from two samples (before and after the probe
ran), each stamped with the host's monotonic clock and its clock tick rate.
"""

from __future__ import annotations

import os
import time
from typing import Any


def _user_system(stat_text: str) -> tuple[int, int]:
    """utime and stime (fields 14 and 15) of a /proc stat line; the name may hold spaces and ")"."""
    fields = stat_text.rpartition(")")[2].split()
    return int(fields[11]), int(fields[12])


def _read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def _run_delay_ns(pid: int, tid: int) -> int:
    """How long the thread was runnable but waited for a CPU (schedstat's second field, ns): for a vCPU
    thread, the time the host kept the guest's vCPU from running, whatever the guest thinks it did."""
    try:
        return int(_read(f"/proc/{pid}/task/{tid}/schedstat").split()[1])
    except (OSError, ValueError, IndexError):
        return 0                # a kernel without CONFIG_SCHED_INFO: no waiting time known


def _memory_kib(pid: int) -> dict[str, int]:
    out = {}
    for line in _read(f"/proc/{pid}/smaps_rollup").splitlines():
        key, _, value = line.partition(":")
        if key in ("Rss", "Pss"):
            out[key.lower() + "_kib"] = int(value.split()[0])
    return out


def guest_usage(pid: int, vcpu_threads: list[int]) -> dict[str, Any] | None:
    """One QEMU process's CPU ticks (vCPU threads, the rest) and memory, or None when it is gone."""
    try:
        vcpu_user = vcpu_system = vcpu_wait = 0
        for tid in dict.fromkeys(vcpu_threads):        # single-threaded TCG: one thread for all vCPUs
            u, s = _user_system(_read(f"/proc/{pid}/task/{tid}/stat"))
            vcpu_user, vcpu_system = vcpu_user + u, vcpu_system + s
            vcpu_wait += _run_delay_ns(pid, tid)
        # the process after its vCPUs: its total then holds every tick they had when read, so the
        # busy vCPUs' ticks in between do not come off "other"
        user, system = _user_system(_read(f"/proc/{pid}/stat"))
        memory = _memory_kib(pid)
    except (OSError, ValueError, IndexError):
        return None
    return {"pid": pid, "vcpus": len(vcpu_threads),
            "vcpu": {"user": vcpu_user, "system": vcpu_system}, "vcpu_wait_ns": vcpu_wait,
            "other": {"user": max(0, user - vcpu_user), "system": max(0, system - vcpu_system)},
            **memory}


def sample(guests) -> dict[str, Any] | None:
    """Every running guest of an environment (QemuGuest objects), stamped; None when none runs."""
    out = []
    for i, g in enumerate(guests):
        if g.up and g.proc is not None and g.proc.poll() is None:
            usage = guest_usage(g.proc.pid, g.vcpu_threads)
            if usage is not None:
                out.append({"guest": i + 1, **usage})
    if not out:
        return None
    return {"t": time.monotonic(), "clock_ticks": os.sysconf("SC_CLK_TCK"), "guests": out}
