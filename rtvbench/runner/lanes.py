"""Lanes of a run that measure at the same time (`rtvbench run --jobs N`, rtvbench.campaign.plan.lanes).

Each running lane has a thread of its own: the measuring happens on the boards, the host side mostly
waits on their output. Ctrl-C and SIGTERM reach only the main thread, which waits here; it hands the
interruption on to every lane as a KeyboardInterrupt raised in the lane's thread, where the target's
drain_or_stop meets it as it meets Ctrl-C in a run of one lane: the command is asked to stop, drained,
and killed after a grace, and the measurement is stored as interrupted.
"""

from __future__ import annotations

import ctypes
import threading
from collections import deque
from typing import Callable

from rtvbench.errors import TargetError

#: how often the main thread wakes while it waits for the lanes: signals are handled between waits
_WAIT_S = 0.2

#: a lane's work: it measures until done, or until the event says the run stops (between measurements)
LaneWork = Callable[[threading.Event], None]


def _raise_in(thread: threading.Thread, exc: type[BaseException]) -> None:
    """Raise exc in another thread of this process, at its next Python instruction: a thread blocked
    in a wait with a timeout (every drain of a command output has one) meets it within that timeout."""
    if thread.ident is not None and thread.is_alive():
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(exc))


class Lanes:
    """At most `jobs` lanes at once, started in the order given. A lane whose board cannot be reached
    again (TargetError) stops alone and the others finish; then that error is raised. Any other error
    of a lane (the store failing) stops the others after their current measurement, and is raised."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        self.stopping = threading.Event()

    def run(self, work: list[LaneWork]) -> None:
        pending = deque(work)
        taking = threading.Lock()
        lost: list[TargetError] = []
        failed: list[BaseException] = []
        count = min(self.jobs, len(work))
        ended = [threading.Event() for _ in range(count)]

        def worker(i: int) -> None:
            try:
                while not self.stopping.is_set():
                    with taking:
                        if not pending:
                            return
                        lane = pending.popleft()
                    try:
                        lane(self.stopping)
                    except TargetError as e:
                        lost.append(e)
                    except KeyboardInterrupt:
                        return          # handed on from the main thread: the lane's measurement is stored
                    except BaseException as e:      # noqa: BLE001 - raised in the main thread below
                        failed.append(e)
                        self.stopping.set()
            except KeyboardInterrupt:
                return                  # met between two lanes
            finally:
                ended[i].set()

        threads = [threading.Thread(target=worker, args=(i,), name=f"rtvbench-lane-{i + 1}", daemon=True)
                   for i in range(count)]
        for thread in threads:
            thread.start()
        try:
            self._wait(ended)
        except KeyboardInterrupt:
            self._interrupt(threads, ended)
            raise
        if failed:
            raise failed[0]
        if lost:
            raise lost[0]

    def _interrupt(self, threads: list[threading.Thread], ended: list[threading.Event]) -> None:
        """Stop every lane as one measurement stops on Ctrl-C, and wait until each has stored what it
        measured; a further Ctrl-C is handed on again (it cuts the grace of a command short)."""
        self.stopping.set()
        for thread, done in zip(threads, ended):
            if not done.is_set():
                _raise_in(thread, KeyboardInterrupt)
        while True:
            try:
                self._wait(ended)
                return
            except KeyboardInterrupt:
                for thread, done in zip(threads, ended):
                    if not done.is_set():
                        _raise_in(thread, KeyboardInterrupt)

    @staticmethod
    def _wait(ended: list[threading.Event]) -> None:
        # Each lane's own event, not Thread.join: a join that Ctrl-C interrupts takes the thread for
        # ended while it still runs (CPython before 3.13), and the run would close its targets under it.
        for done in ended:
            while not done.wait(_WAIT_S):
                pass
