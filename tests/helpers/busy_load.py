"""A CPU load for tests: busy-loops in this process and in N children.

Usage: busy_load.py MARKER LOGFILE N
MARKER only makes the processes findable in /proc. The leader appends
"start PID NS" / "stop PID NS" (CLOCK_REALTIME ns) to LOGFILE, so a test can check
that the load covered the measurement. The first child leaves the process group,
as a daemonising helper would: stopping the load must still reach it.
"""

import os
import signal
import sys
import time

marker, log, children = sys.argv[1], sys.argv[2], int(sys.argv[3])
leader = os.getpid()


def note(what: str) -> None:
    with open(log, "a") as f:
        f.write(f"{what} {os.getpid()} {time.time_ns()}\n")


def on_term(*_):
    # A stop is often two SIGTERMs (the group's, then each process's): the second must not log a
    # second "stop" while the first is still writing it.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if os.getpid() == leader:
        note("stop")
    os._exit(0)


signal.signal(signal.SIGTERM, on_term)
for i in range(children):
    if os.fork() == 0:
        if i == 0:
            os.setpgid(0, 0)
        break
if os.getpid() == leader:
    note("start")
while True:
    pass
