"""Ctrl-C while lanes measure (rtvbench.runner.lanes): the main thread hands the interruption on to
every lane still in its work, never to a lane that is leaving (it would end without saying so and
the run would wait for it forever) nor to a thread that is not a lane. CPython before 3.12 gives a
thread that is being started the id of the thread starting it, so an interruption raised in a lane
that starts a thread (a command's reader) used to land in the new thread, which died before it said
it had started, and the lane waited in Thread.start forever: this script hung within 400 rounds in
each of three tries before the fix. It interrupts its main thread at varying moments of lanes that
start threads and end at once; every run must end, and only lanes may meet the interruption."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = r"""
import random, signal, sys, threading, time
from rtvbench.runner.lanes import Lanes

rounds, strays, ends = int(sys.argv[1]), [], 0
main = threading.get_ident()

def short_lane(stopping):
    # a lane that starts and ends threads of its own (a guest's reader, a stop command's) as it ends
    def helper():
        try:
            time.sleep(random.random() / 2000)
        except KeyboardInterrupt:
            strays.append(threading.current_thread().name)
    for _ in range(3):
        t = threading.Thread(target=helper, name="not-a-lane")
        t.start()
        t.join()

random.seed(7)
for r in range(rounds):
    lanes = Lanes(3)
    timer = threading.Timer(random.random() / 200, lambda: signal.pthread_kill(main, signal.SIGINT))
    try:
        timer.start()
        lanes.run([short_lane] * random.randint(1, 12))
    except KeyboardInterrupt:
        pass
    while timer.is_alive():         # a SIGINT that comes after the run ended lands here
        try:
            timer.join()
            time.sleep(0.001)
        except KeyboardInterrupt:
            pass
    ends += 1
print(ends, len(strays))
"""


def test_an_interruption_reaches_lanes_only_and_every_run_ends():
    rounds = 400
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(rounds)], capture_output=True, text=True,
                       cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == [str(rounds), "0"], r.stderr[-2000:]
    assert "Exception ignored" not in r.stderr and "Traceback" not in r.stderr, r.stderr[-2000:]
