"""The `kernel-tracer` benchmark: the kernel's timerlat, osnoise or hwlat tracer with
`rtvb-probe kernel-tracer` (docs/probe/kernel-tracer.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import model_validator

from rtvbench.benchmarks.base import BENCHMARKS, Benchmark
from rtvbench.cpulist import pinned_cpus, probe_cpus
from rtvbench.params import StrictModel, number_arg, probe_int, probe_number
from rtvbench.spec import Placement
from rtvbench.targets.capabilities import OwnedKernel

# The probe's ranges (module level: pydantic reads annotations by name).
DurationS = probe_number("duration-s", 0.1, 1e6, "a number of seconds")
PeriodUs = probe_int("period-us", 100, 1_000_000)
WindowUs = probe_int("window-us", 1000, 100_000_000)
WidthUs = probe_int("width-us", 100, 99_999_999)
ThresholdUs = probe_int("threshold-us", 1, 1_000_000)
Cpus = probe_cpus("cpus", 1024)


class KernelTracerParams(StrictModel):
    tracer: Literal["timerlat", "osnoise", "hwlat"] = "timerlat"
    # The tracer keeps a kernel thread busy or waking on every CPU it is given: a campaign names how long.
    duration_s: DurationS = 10
    period_us: PeriodUs = 1000                # timerlat: period of its timer
    window_us: WindowUs = 1_000_000           # hwlat: one sample per window ...
    width_us: WidthUs = 500_000               # ... spinning with interrupts off for this long of it
    threshold_us: ThresholdUs = 10            # hwlat: the shortest gap it reports
    cpus: Cpus | None = None                  # None: every CPU the probe may run on

    @model_validator(mode="after")
    def _width_within_window(self):
        if self.width_us >= self.window_us:
            raise ValueError(f"width_us ({self.width_us}) must be below window_us ({self.window_us}): hwlat "
                             "spins for width_us of every window_us and sleeps for the rest")
        return self


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
        if p.tracer == "hwlat":
            args += ["--window-us", str(p.window_us), "--width-us", str(p.width_us),
                     "--threshold-us", str(p.threshold_us)]
        if p.cpus is not None:
            args += ["--cpus", p.cpus]
        return args

    def execute(self, target, argv: list[str], on_line, deadline=None):
        # Where the kernel runs hwlat only in the top-level tracing instance, the probe takes that over
        # only in a kernel that is rtvbench's alone; elsewhere it refuses rather than end the
        # machine's own tracing session.
        if self.params.tracer == "hwlat" and isinstance(target, OwnedKernel):
            argv = [*argv, "--top-level"]
        return target.run(argv, on_line, deadline)

    def expected_seconds(self) -> float:
        return float(self.params.duration_s)
