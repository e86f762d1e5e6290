"""The `rtos` benchmark: RTOS-like primitive costs with `rtvb-probe rtos` (docs/probe/rtos.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import model_validator

from rtvbench.benchmarks.base import BENCHMARKS, Benchmark
from rtvbench.cpulist import pinned_cpus, probe_cpus
from rtvbench.kinds.rtos.names import RTOS_TESTS
from rtvbench.params import RealtimeThreads, names_or_all, probe_int
from rtvbench.spec import Placement

#: the probe's defaults (probe/rtos.c)
DEFAULT_COUNT = 1000
#: the probe's timer test sleeps this long per operation (RTOS_TIMER_PERIOD_NS)
TIMER_PERIOD_S = 250e-6

# The probe's ranges (module level: pydantic reads annotations by name).
Priority = probe_int("priority", 0, 99)
Count = probe_int("count", 1, 1_000_000)
Cpus = probe_cpus("cpus", 1)
Tests = names_or_all(RTOS_TESTS, "test")


class RtosParams(RealtimeThreads):
    policy: Literal["fifo", "rr", "other"] = "fifo"
    priority: Priority | None = None        # the activated thread's; the activating one runs one below
    count: Count = DEFAULT_COUNT            # operations measured per test
    tests: Tests = tuple(RTOS_TESTS)
    cpus: Cpus | None = None                # the one CPU of every test thread; None: the probe's last allowed

    @model_validator(mode="after")
    def _room_below(self):
        if self.policy != "other" and self.priority == 1:
            raise ValueError(f'policy "{self.policy}" needs priority from 2 to 99 here: the activating thread '
                             "runs one below the activated one")
        return self


@BENCHMARKS.register("rtos")
class RtosBenchmark(Benchmark):
    kind = "rtos"
    Params = RtosParams

    def placement(self) -> Placement:
        # Two threads per test, but one runs while the other is blocked: one measuring thread at once.
        p: RtosParams = self.params
        return Placement(pinned_cpus(p.cpus),
                         rt_priority=p.priority if p.policy != "other" else None, realtime_option=True)

    def probe_args(self) -> list[str]:
        p: RtosParams = self.params
        tests = "all" if tuple(p.tests) == tuple(RTOS_TESTS) else ",".join(p.tests)
        args = ["rtos", "--policy", p.policy, "--count", str(p.count), "--tests", tests]
        if p.priority is not None and p.policy != "other":
            # Always written: the stored command reproduces the run whatever a probe's default is.
            args += ["--priority", str(p.priority)]
        if p.cpus is not None:
            args += ["--cpus", p.cpus]
        return args

    def expected_seconds(self) -> float:
        p: RtosParams = self.params
        # The timer test sleeps a period per operation; every other operation takes microseconds.
        timer = TIMER_PERIOD_S if "timer" in p.tests else 0.0
        return 0.05 + p.count * (timer + 5e-6 * len(p.tests))
