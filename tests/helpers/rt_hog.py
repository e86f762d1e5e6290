"""A known interruption for noise tests: a SCHED_FIFO process that takes one CPU for a burst every period.

Usage: rt_hog.py CPU PRIORITY BURST_MS PERIOD_MS

It pins itself to CPU at SCHED_FIFO PRIORITY (so it preempts a measuring thread of lower
priority there), prints "ready" once it is, then every PERIOD_MS spins for BURST_MS of
CLOCK_MONOTONIC. On SIGTERM it prints one JSON line, {"bursts": [[start, end], ...]}, the
CLOCK_REALTIME ns of every burst, so a test can count the bursts that fell inside a run.
"""

import json
import os
import signal
import sys
import time

cpu, priority, burst_ms, period_ms = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
bursts: list[tuple[int, int]] = []
stop = False


def on_term(*_):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)
os.sched_setaffinity(0, {cpu})
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
print("ready", flush=True)

burst_ns, period_ns = int(burst_ms * 1e6), int(period_ms * 1e6)
next_start = time.monotonic_ns() + period_ns
while not stop:
    wait = next_start - time.monotonic_ns()
    if wait > 0:
        time.sleep(wait / 1e9)
    if stop:
        break
    real0, t0 = time.time_ns(), time.monotonic_ns()
    end = t0 + burst_ns
    while time.monotonic_ns() < end:
        pass
    bursts.append((real0, real0 + time.monotonic_ns() - t0))
    next_start += period_ns
    # A late start does not make up for bursts it missed: the period stays the same.
    while next_start <= time.monotonic_ns():
        next_start += period_ns
print(json.dumps({"bursts": bursts}), flush=True)
