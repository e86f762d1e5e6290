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
import time
from collections import deque
from typing import Callable

from rtvbench.errors import TargetError

#: how often the main thread wakes while it waits for the lanes: signals are handled between waits
_WAIT_S = 0.2

#: a lane's work: it measures until done, or until the event says the run stops (between measurements)
LaneWork = Callable[[threading.Event], None]


#: how long a hand-on waits for the thread starts under way to end before it raises anyway
_STARTS_WAIT_S = 1.0


def _while_no_thread_starts(act: Callable[[], None]) -> None:
    """act() at a moment no thread of the threading module is being started, and none can start
    until it returns. CPython before 3.12 gives a new thread's state the id of the thread that starts
    it until the new thread runs, and looks a thread up by id newest first: an exception raised in a
    lane that is starting a thread (a command's reader) lands in the new thread's first instruction
    instead, which ends it before it says it started, and the lane waits in Thread.start forever. A
    thread is in threading's _limbo from before its state exists until after it has its own id."""
    lock, limbo = getattr(threading, "_active_limbo_lock", None), getattr(threading, "_limbo", None)
    if lock is None or limbo is None:           # another threading module: act as before
        act()
        return
    deadline = time.monotonic() + _STARTS_WAIT_S
    while True:
        with lock:
            if not limbo or time.monotonic() > deadline:
                act()
                return
        time.sleep(0.0005)


def _raise_in(thread: threading.Thread, exc: type[BaseException] | None) -> None:
    """Raise exc in another thread of this process, at its next Python instruction: a thread blocked
    in a wait with a timeout (every drain of a command output has one) meets it within that timeout.
    None takes back one raised there that the thread has not met yet."""
    if thread.ident is not None:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident),
                                                   None if exc is None else ctypes.py_object(exc))


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
        # Which lanes an interruption may be handed on to: a lane is in from the first instruction of
        # its try until it leaves, and as it leaves it waits for a hand-on under way to end, then takes
        # back what is still pending. So the main thread never raises in a lane's finally (the lane
        # would end without saying so, and the run would wait for it forever) nor, once the lane's
        # thread has ended, in a new thread that got the same thread id (a command's reader). Flags,
        # not a lock: an interruption that lands while a lock is being taken leaves it taken.
        inside = [False] * count
        handing = [False]
        threads: list[threading.Thread] = []

        def leave(i: int) -> None:
            inside[i] = False
            while True:
                try:
                    while handing[0]:
                        time.sleep(0.0005)
                    _raise_in(threads[i], None)
                    break
                except KeyboardInterrupt:
                    continue        # handed on just before: the lane is stopping anyway
            ended[i].set()

        def worker(i: int) -> None:
            try:
                inside[i] = True
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
                leave(i)

        def raise_in_lanes() -> None:
            for thread, still in zip(threads, inside):
                if still:
                    _raise_in(thread, KeyboardInterrupt)

        def hand_on() -> None:
            handing[0] = True
            try:
                _while_no_thread_starts(raise_in_lanes)
            finally:
                handing[0] = False

        threads += [threading.Thread(target=worker, args=(i,), name=f"rtvbench-lane-{i + 1}", daemon=True)
                    for i in range(count)]
        for thread in threads:
            thread.start()
        try:
            self._wait(ended)
        except KeyboardInterrupt:
            self._interrupt(hand_on, ended)
            raise
        if failed:
            raise failed[0]
        if lost:
            raise lost[0]

    def _interrupt(self, hand_on: Callable[[], None], ended: list[threading.Event]) -> None:
        """Stop every lane as one measurement stops on Ctrl-C, and wait until each has stored what it
        measured; a further Ctrl-C is handed on again (it cuts the grace of a command short)."""
        self.stopping.set()
        hand_on()
        while True:
            try:
                self._wait(ended)
                return
            except KeyboardInterrupt:
                hand_on()

    @staticmethod
    def _wait(ended: list[threading.Event]) -> None:
        # Each lane's own event, not Thread.join: a join that Ctrl-C interrupts takes the thread for
        # ended while it still runs (CPython before 3.13), and the run would close its targets under it.
        for done in ended:
            while not done.wait(_WAIT_S):
                pass
