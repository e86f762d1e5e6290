"""The `latency` benchmark: timer wake-up latency with `rtvb-probe latency`."""

from __future__ import annotations

from typing import Literal

from pydantic import model_validator

from rtvbench.benchmarks.base import BENCHMARKS, Benchmark
from rtvbench.cpulist import pinned_cpus, probe_cpus
from rtvbench.kinds.latency.names import RESPONSE, over_threshold_ns, split_cpu_figure
from rtvbench.params import (DEFAULT_RT_PRIORITY, RealtimeThreads, number_arg, probe_int, probe_list,
                             probe_number)
from rtvbench.spec import Placement


#: the real-time priority of policy "fifo"/"rr" when the campaign names none: the probe's own
#: default (probe/latency.c), which tests/test_spec.py checks it agrees with
DEFAULT_PRIORITY = DEFAULT_RT_PRIORITY


# The probe's ranges (module level: pydantic reads annotations by name).
IntervalUs = probe_int("interval-us", 1, 3_600_000_000)
DurationS = probe_number("duration-s", 0.001, 1e7, "a number of seconds")
Loops = probe_int("loops", 1, 2**63 - 1)
Priority = probe_int("priority", 0, 99)
Cpus = probe_cpus("cpus", 1024)
ThresholdUs = probe_number("threshold-us", 0.001, 3.6e9, "a number of microseconds")
ThresholdsUs = probe_list(ThresholdUs, "threshold-us", 16)
WindowS = probe_number("window-s", 0.01, 1e6, "a number of seconds")
WorkUs = probe_number("work-us", 0.001, 3.6e9, "a number of microseconds")
TraceThresholdUs = probe_number("trace-threshold-us", 0.001, 3.6e9, "a number of microseconds")
TraceBreaches = probe_int("trace-breaches", 1, 1000)
TraceHistoryMs = probe_number("trace-history-ms", 0.1, 10000, "a number of milliseconds")


class LatencyParams(RealtimeThreads):
    interval_us: IntervalUs = 1000
    duration_s: DurationS | None = None
    loops: Loops | None = None
    priority: Priority | None = None          # DEFAULT_PRIORITY for fifo/rr; None for other
    policy: Literal["fifo", "rr", "other"] = "fifo"
    cpus: Cpus | None = None                # None: every CPU the probe may run on
    thresholds_us: ThresholdsUs = []
    window_s: WindowS | None = None
    mode: Literal["abstime", "relative"] = "abstime"
    # A fixed work budget after each wake-up (the "victim" of interference tests): adds
    # response times and deadline misses to the results.
    work_us: WorkUs | None = None
    # Kernel trace capture: on a wake-up later than this, the probe saves the trace of the measured
    # CPUs (at most trace_breaches per measurement, trace_history_ms before each deadline) and the
    # report explains each spike.
    trace_threshold_us: TraceThresholdUs | None = None
    trace_breaches: TraceBreaches = 10
    trace_history_ms: TraceHistoryMs = 20

    @model_validator(mode="after")
    def _consistent(self):
        # Without a limit the probe would run until interrupted: a campaign must end.
        if self.duration_s is None and self.loops is None:
            raise ValueError("needs duration_s (seconds) or loops (activations per CPU) so that it ends")
        if self.duration_s is not None and self.loops is not None:
            raise ValueError("set duration_s or loops, not both")
        if self.work_us is not None and self.work_us >= self.interval_us:
            raise ValueError(f"work_us ({self.work_us}) must be shorter than interval_us ({self.interval_us}): "
                             "a work budget of a whole period or more misses every deadline")
        return self


@BENCHMARKS.register("latency")
class LatencyBenchmark(Benchmark):
    kind = "latency"
    Params = LatencyParams

    def figure_problem(self, figure: str) -> str | None:
        p: LatencyParams = self.params
        base = split_cpu_figure(figure)
        threshold = over_threshold_ns(base)
        if threshold is not None and threshold / 1000 not in [float(t) for t in p.thresholds_us]:
            have = ", ".join(f"{t:g}" for t in p.thresholds_us) or "none"
            return (f"counts samples over {threshold / 1000:g} us, but the benchmark's thresholds_us are {have}: "
                    f"add {threshold / 1000:g} to thresholds_us")
        if (base.startswith(RESPONSE) or base == "deadline_misses") and p.work_us is None:
            return "exists only with a work budget: set work_us"
        return None

    def placement(self) -> Placement:
        p: LatencyParams = self.params
        return Placement(pinned_cpus(p.cpus),
                         rt_priority=p.priority if p.policy != "other" else None, realtime_option=True)

    def probe_args(self) -> list[str]:
        p: LatencyParams = self.params
        args = ["latency", "--interval-us", str(p.interval_us)]
        if p.duration_s is not None:
            args += ["--duration-s", number_arg(p.duration_s)]
        if p.loops is not None:
            args += ["--loops", str(p.loops)]
        args += ["--policy", p.policy]
        if p.priority is not None and p.policy != "other":
            # Always written: the stored command reproduces the run whatever a probe's default is.
            args += ["--priority", str(p.priority)]
        if p.cpus is not None:
            args += ["--cpus", p.cpus]
        for t in p.thresholds_us:
            args += ["--threshold-us", number_arg(t)]
        if p.window_s is not None:
            args += ["--window-s", number_arg(p.window_s)]
        args += ["--mode", p.mode]
        if p.work_us is not None:
            args += ["--work-us", number_arg(p.work_us)]
        if p.trace_threshold_us is not None:
            args += ["--trace-threshold-us", number_arg(p.trace_threshold_us),
                     "--trace-breaches", str(p.trace_breaches), "--trace-history-ms", number_arg(p.trace_history_ms)]
        return args

    def expected_seconds(self) -> float:
        p: LatencyParams = self.params
        if p.duration_s is not None:
            return float(p.duration_s)
        return p.loops * p.interval_us / 1e6
