"""The `rtos` tests and figure names, read by the campaign stage (test names) and the decoder.

Figures (docs/probe/rtos.md), each time in `_ns`, `_us` and `_ms`:
  `<test>.<stat>_<unit>`        stat: min, avg, max, stddev, p50 ... p999999 of the test's operations
                                (`futex_wake.avg_us`, `timer.p99_us`, `mutex.min_ns`)
  `sem_pingpong.half.<stat>_<unit>`     half the round trip (min, avg, p50, p99, max)
  `sem_pingpong.forward.<stat>_<unit>`  the measured step from the first thread's post to the second's
  `sem_pingpong.back.<stat>_<unit>`     wait returning, and back
"""

from __future__ import annotations

import re

from rtvbench.units import PERCENTILES, TIME_STEMS, TIME_UNITS

#: the probe's tests in its run order, with what one operation is
RTOS_TESTS: dict[str, str] = {
    "futex_wake": "futex wake -> woken thread runs",
    "sem_wake": "sem_post -> sem_wait returns",
    "mutex": "mutex lock + unlock, uncontended",
    "mutex_handover": "mutex unlock -> blocked waiter's lock returns",
    "sem": "semaphore give + take, uncontended",
    "sem_pingpong": "semaphore ping-pong round trip",
    "mq": "mq_send -> mq_receive returns",
    "signal": "pthread_kill -> sigwait returns",
    "yield": "sched_yield -> other thread runs",
    "timer": "timer deadline -> thread runs",
}
#: the tests written against the porting layer (docs/porting.md), `rtos --port` and the bare-metal
#: image's `rtos`, that the subcommand's own list lacks
PORT_TESTS: dict[str, str] = {
    "task_activate": "task activation -> activated task runs",
    "irq_task": "timer deadline -> task the handler activated runs",
}
#: what `rtos --port` runs, in its order (probe/port/port_tests.c): the bare-metal image's `rtos` too
PORT_RUN_TESTS: tuple[str, ...] = ("task_activate", "sem_wake", "sem_pingpong", "irq_task")
#: every test a result may name: the subcommand's, then the port's own
ALL_TESTS: dict[str, str] = {**RTOS_TESTS, **PORT_TESTS}
#: the parts of the ping-pong besides its round trip, and their words
PINGPONG_PARTS = {"half": "semaphore ping-pong, half the round trip",
                  "forward": "semaphore ping-pong, one way there (measured)",
                  "back": "semaphore ping-pong, one way back (measured)"}
#: the statistics of the half round trip (the probe halves these of the round trip)
HALF_STEMS = ("min", "avg", "p50", "p99", "max")
#: the statistics every table of the kind shows, in this order
TABLE_STATS = ("min", "avg", "p99", "max")

_FIGURE = re.compile(r"^([a-z_]+)(?:\.(half|forward|back))?\.([a-z0-9]+)_(ns|us|ms)$")


def split(figure: str) -> tuple[str, str | None, str, str] | None:
    """(test, part or None, stat, unit) of a figure name of this kind, None when it is not one."""
    m = _FIGURE.match(figure)
    if not m:
        return None
    test, part, stat, unit = m.groups()
    if test not in ALL_TESTS or stat not in TIME_STEMS or unit not in TIME_UNITS:
        return None
    if part is not None and (test != "sem_pingpong" or (part == "half" and stat not in HALF_STEMS)):
        return None
    return test, part, stat, unit


def row(test: str, part: str | None = None) -> str:
    """The name of a table row: a test, or a part of the ping-pong (`sem_pingpong.half`)."""
    return f"{test}.{part}" if part else test


def row_words(row_name: str) -> str:
    """What a table row measures, in words."""
    test, _, part = row_name.partition(".")
    return PINGPONG_PARTS[part] if part else ALL_TESTS[test]


def figure(row_name: str, stat: str, unit: str = "us") -> str:
    return f"{row_name}.{stat}_{unit}"


def stat_words(stat: str) -> str:
    return f"p{PERCENTILES[stat]:g}" if stat in PERCENTILES else stat
