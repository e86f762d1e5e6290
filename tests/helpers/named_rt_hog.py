"""A real-time CPU hog of known shape, for trace attribution ground truth.

    python3 named_rt_hog.py CPU SPIN_MS EVERY_MS DURATION_S LOG

Pinned to CPU, SCHED_FIFO priority 90, named `rtvb-hog`: spins SPIN_MS every EVERY_MS for
DURATION_S, and writes each burst's start and end (CLOCK_MONOTONIC ns, the clock the probe and
its trace use) to LOG, one "start end" line per burst, so a test can tell which late wake-ups it
caused.
"""

import os
import sys
import time


def main() -> None:
    cpu, spin_ms, every_ms, duration_s, log = (int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]),
                                               float(sys.argv[4]), sys.argv[5])
    with open("/proc/self/comm", "w") as f:
        f.write("rtvb-hog")
    os.sched_setaffinity(0, {cpu})
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(90))
    bursts = []
    end = time.monotonic_ns() + int(duration_s * 1e9)
    period, spin = int(every_ms * 1e6), int(spin_ms * 1e6)
    nxt = time.monotonic_ns() + period
    while nxt < end:
        time.sleep(max(0.0, (nxt - time.monotonic_ns()) / 1e9))
        start = time.monotonic_ns()
        while time.monotonic_ns() - start < spin:
            pass
        bursts.append((start, time.monotonic_ns()))
        nxt += period
    with open(log, "w") as f:
        f.writelines(f"{a} {b}\n" for a, b in bursts)


if __name__ == "__main__":
    main()
