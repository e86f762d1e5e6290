"""The `noise` benchmark: OS noise with `rtvb-probe noise` (docs/probe/noise.md)."""

from __future__ import annotations

from typing import Literal

from rtvbench.benchmarks.base import BENCHMARKS, Benchmark
from rtvbench.cpulist import pinned_cpus, probe_cpus
from rtvbench.params import DEFAULT_RT_PRIORITY, RealtimeThreads, number_arg, probe_int, probe_number
from rtvbench.spec import Placement

#: the probe's own defaults (probe/noise.c), which tests/test_probe_noise.py checks these agree with
DEFAULT_PRIORITY = DEFAULT_RT_PRIORITY
DEFAULT_THRESHOLD_US = 1.0

# The probe's ranges (module level: pydantic reads annotations by name).
DurationS = probe_number("duration-s", 0.001, 1e7, "a number of seconds")
Priority = probe_int("priority", 0, 99)
Cpus = probe_cpus("cpus", 1024)
ThresholdUs = probe_number("threshold-us", 0.001, 3.6e9, "a number of microseconds")


class NoiseParams(RealtimeThreads):
    # Every measured CPU is kept busy for the whole run: a campaign names how long.
    duration_s: DurationS = 10
    cpus: Cpus | None = None                # None: every CPU the probe may run on
    priority: Priority | None = None        # DEFAULT_PRIORITY for fifo/rr; None for other
    policy: Literal["fifo", "rr", "other"] = "fifo"
    threshold_us: ThresholdUs = DEFAULT_THRESHOLD_US   # a gap above it is an interruption


@BENCHMARKS.register("noise")
class NoiseBenchmark(Benchmark):
    kind = "noise"
    Params = NoiseParams

    def placement(self) -> Placement:
        p: NoiseParams = self.params
        return Placement(pinned_cpus(p.cpus),
                         rt_priority=p.priority if p.policy != "other" else None, realtime_option=True)

    def probe_args(self) -> list[str]:
        p: NoiseParams = self.params
        args = ["noise", "--duration-s", number_arg(p.duration_s), "--policy", p.policy]
        if p.priority is not None and p.policy != "other":
            # Always written: the stored command reproduces the run whatever a probe's default is.
            args += ["--priority", str(p.priority)]
        if p.cpus is not None:
            args += ["--cpus", p.cpus]
        args += ["--threshold-us", number_arg(p.threshold_us)]
        return args

    def expected_seconds(self) -> float:
        return float(self.params.duration_s)
