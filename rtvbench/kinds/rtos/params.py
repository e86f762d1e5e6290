"""The `rtos` benchmark: RTOS-like primitive costs with `rtvb-probe rtos` (docs/probe/rtos.md)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import model_validator

from rtvbench.benchmarks.base import BENCHMARKS, Benchmark
from rtvbench.cpulist import pinned_cpus, probe_cpus
from rtvbench.kinds.rtos.names import ALL_TESTS, PORT_RUN_TESTS, RTOS_TESTS
from rtvbench.params import RealtimeThreads, names_or_all, probe_int
from rtvbench.spec import Placement

#: the probe's defaults (probe/rtos.c)
DEFAULT_COUNT = 1000
#: the probe's timer test sleeps this long per operation (RTOS_TIMER_PERIOD_NS)
TIMER_PERIOD_S = 250e-6
#: the port's irq_task arms its timer this far ahead per operation (PORT_TIMER_AHEAD_NS)
PORT_TIMER_AHEAD_S = 250e-6
#: with port = true the activated task's priority leaves room for the port's tasks and timer thread
#: (probe/rtos.c: PORT_PRIO_HIGH .. 99 - (PORT_PRIO_MAX + 1 - PORT_PRIO_HIGH))
PORT_PRIORITY = (4, 94)

# The probe's ranges (module level: pydantic reads annotations by name).
Priority = probe_int("priority", 0, 99)
Count = probe_int("count", 1, 1_000_000)
Cpus = probe_cpus("cpus", 1)
#: "all" is the tests of the mode (port or not); the validator below holds each name to its mode
Tests = names_or_all(ALL_TESTS, "test")


class RtosParams(RealtimeThreads):
    policy: Literal["fifo", "rr", "other"] = "fifo"
    priority: Priority | None = None        # the activated thread's; the activating one runs one below
    count: Count = DEFAULT_COUNT            # operations measured per test
    tests: Tests = tuple(RTOS_TESTS)        # "all": the mode's own, resolved below
    cpus: Cpus | None = None                # the one CPU of every test thread; None: the probe's last allowed
    #: the tests written against the porting layer (`rtos --port`), the ones a bare-metal partition runs
    port: bool = False

    @model_validator(mode="after")
    def _room_below(self):
        if self.policy != "other" and self.priority == 1:
            raise ValueError(f'policy "{self.policy}" needs priority from 2 to 99 here: the activating thread '
                             "runs one below the activated one")
        lo, hi = PORT_PRIORITY
        if self.port and self.policy != "other" and self.priority is not None and not lo <= self.priority <= hi:
            raise ValueError(f"port = true needs priority from {lo} to {hi}: the port's tasks and timer thread run "
                             "below and above the activated one")
        return self

    @model_validator(mode="before")
    @classmethod
    def _all_of_the_mode(cls, data: Any) -> Any:
        # "all" (or none) is the tests of the mode the same table picks.
        if isinstance(data, dict) and data.get("tests", "all") == "all":
            data = {**data, "tests": list(PORT_RUN_TESTS if data.get("port") is True else RTOS_TESTS)}
        return data

    @model_validator(mode="after")
    def _tests_of_the_mode(self):
        own = PORT_RUN_TESTS if self.port else tuple(RTOS_TESTS)
        foreign = [t for t in self.tests if t not in own]
        if foreign:
            raise ValueError(f"test {foreign[0]} is not one of {'port = true' if self.port else 'the subcommand'}'s "
                             f"tests ({', '.join(own)}); "
                             f"{'set port = true or ' if not self.port and foreign[0] in PORT_RUN_TESTS else ''}"
                             "list only those")
        return self


@BENCHMARKS.register("rtos")
class RtosBenchmark(Benchmark):
    kind = "rtos"
    Params = RtosParams

    key_options = {"policy": "--policy", "priority": "--priority", "count": "--count", "tests": "--tests",
                   "cpus": "--cpus", "port": "--port"}
    # The bare-metal image's rtos is `rtos --port` on its own scheduler (probe/baremetal/rtos.c).
    freestanding_options = ("--count", "--tests", "--port")

    def freestanding_problems(self, area_bytes: int) -> list[tuple[str, str]]:
        if not self.params.port:
            return [("port", "it runs the tests written against the porting layer only (" +
                     ", ".join(PORT_RUN_TESTS) + "); set port = true, which runs the same tests in the other "
                     "environments")]
        return []

    def freestanding_argv(self, argv: list[str]) -> list[str]:
        # --port is a flag, the image's rtos always is it: the pairs of options and values are the rest.
        return super().freestanding_argv([a for a in argv if a != "--port"])

    def placement(self) -> Placement:
        # Two threads per test, but one runs while the other is blocked: one measuring thread at once.
        p: RtosParams = self.params
        return Placement(pinned_cpus(p.cpus),
                         rt_priority=p.priority if p.policy != "other" else None, realtime_option=True)

    def probe_args(self) -> list[str]:
        p: RtosParams = self.params
        own = PORT_RUN_TESTS if p.port else tuple(RTOS_TESTS)
        tests = "all" if tuple(p.tests) == own else ",".join(p.tests)
        args = ["rtos", *(["--port"] if p.port else []), "--policy", p.policy, "--count", str(p.count),
                "--tests", tests]
        if p.priority is not None and p.policy != "other":
            # Always written: the stored command reproduces the run whatever a probe's default is.
            args += ["--priority", str(p.priority)]
        if p.cpus is not None:
            args += ["--cpus", p.cpus]
        return args

    def expected_seconds(self) -> float:
        p: RtosParams = self.params
        # The timer test sleeps a period per operation; every other operation takes microseconds.
        timer = TIMER_PERIOD_S if "timer" in p.tests else PORT_TIMER_AHEAD_S if "irq_task" in p.tests else 0.0
        return 0.05 + p.count * (timer + 5e-6 * len(p.tests))
