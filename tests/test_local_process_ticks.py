"""The local target's process list (what the runner samples before and after every measurement):
every process by its name, its CPU ticks and last CPU, and whether it is rtvbench's own."""

from __future__ import annotations

import os
import subprocess

from rtvbench.targets.local import local_process_ticks


def test_own_processes_are_marked_and_others_are_not():
    child = subprocess.Popen(["sleep", "30"])
    try:
        listed = local_process_ticks()
    finally:
        child.kill()
        child.wait()
    with open("/proc/self/comm", encoding="utf-8") as f:
        own_name = f.read().strip()
    me, sleeping, init = listed[str(os.getpid())], listed[str(child.pid)], listed["1"]
    assert me[0] == own_name and me[3] == 1
    assert sleeping[0] == "sleep" and sleeping[3] == 1          # started by rtvbench: its own
    assert init[3] == 0                                         # the machine's
    assert all(isinstance(e[1], int) and e[1] >= 0 and isinstance(e[2], int) for e in listed.values())
