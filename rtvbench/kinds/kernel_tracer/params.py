"""The `kernel-tracer` benchmark: the kernel's timerlat or osnoise tracer with
`rtvb-probe kernel-tracer` (docs/probe/kernel-tracer.md)."""

from __future__ import annotations

from typing import Literal

from rtvbench.benchmarks.base import BENCHMARKS, Benchmark
from rtvbench.cpulist import pinned_cpus, probe_cpus
from rtvbench.params import StrictModel, number_arg, probe_int, probe_number
from rtvbench.spec import Placement

# The probe's ranges (module level: pydantic reads annotations by name).
DurationS = probe_number("duration-s", 0.1, 1e6, "a number of seconds")
PeriodUs = probe_int("period-us", 100, 1_000_000)
Cpus = probe_cpus("cpus", 1024)


class KernelTracerParams(StrictModel):
    tracer: Literal["timerlat", "osnoise"] = "timerlat"
    # The tracer keeps a kernel thread busy or waking on every CPU it is given: a campaign names how long.
    duration_s: DurationS = 10
    period_us: PeriodUs = 1000                # timerlat: period of its timer
    cpus: Cpus | None = None                  # None: every CPU the probe may run on


@BENCHMARKS.register("kernel-tracer")
class KernelTracerBenchmark(Benchmark):
    kind = "kernel-tracer"
    Params = KernelTracerParams

    def placement(self) -> Placement:
        p: KernelTracerParams = self.params
        return Placement(pinned_cpus(p.cpus))

    def probe_args(self) -> list[str]:
        p: KernelTracerParams = self.params
        args = ["kernel-tracer", "--tracer", p.tracer, "--duration-s", number_arg(p.duration_s),
                "--period-us", str(p.period_us)]
        if p.cpus is not None:
            args += ["--cpus", p.cpus]
        return args

    def expected_seconds(self) -> float:
        return float(self.params.duration_s)
