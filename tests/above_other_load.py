"""A prefix that runs a command above the machine's other load, where the test may.

A tool that waits for its child, or two tools compared seconds apart, are at the mercy of
whatever else the shared machine runs: beside stress-ng --cpu 2 a forked child waits a time
slice behind the hogs, and a bandwidth run loses half its CPU for part of its window. As
root the command runs SCHED_FIFO (its children inherit it), so what is measured is the
work's own; elsewhere the prefix is empty and the test keeps its ordinary tolerance."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess


def _fifo_prefix() -> tuple[str, ...]:
    prefix = ("chrt", "-f", "50")
    if os.geteuid() != 0 or shutil.which("chrt") is None:
        return ()
    # A container without CAP_SYS_NICE refuses even root.
    if subprocess.run([*prefix, "true"], capture_output=True).returncode != 0:
        return ()
    return prefix


ABOVE_OTHER_LOAD = _fifo_prefix()


@contextlib.contextmanager
def this_thread_above_other_load():
    """The test's own thread SCHED_FIFO for a while (as root), e.g. to time a stall it injects:
    beside stress-ng --cpu 2 the test saw its SIGSTOP take hold up to 3.4 ms late, and the probe
    rightly measured a stall that much longer than the test's clock said."""
    try:
        before = os.sched_getscheduler(0), os.sched_getparam(0)
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50))
    except (PermissionError, OSError):
        yield
        return
    try:
        yield
    finally:
        os.sched_setscheduler(0, before[0], before[1])
