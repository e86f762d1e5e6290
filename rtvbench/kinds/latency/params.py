"""The `latency` benchmark: timer wake-up latency with `rtvb-probe latency`."""

from __future__ import annotations

from rtvbench.benchmarks.base import BENCHMARKS, Benchmark
from rtvbench.cpulist import pinned_cpus
from rtvbench.kinds.latency.keys import LatencyParams
from rtvbench.kinds.latency.names import RESPONSE, over_threshold_ns, split_cpu_figure
from rtvbench.params import number_arg
from rtvbench.spec import Placement


@BENCHMARKS.register("latency")
class LatencyBenchmark(Benchmark):
    kind = "latency"
    Params = LatencyParams
    key_options = {"interval_us": "--interval-us", "duration_s": "--duration-s", "loops": "--loops",
                   "policy": "--policy", "priority": "--priority", "cpus": "--cpus",
                   "thresholds_us": "--threshold-us", "window_s": "--window-s", "mode": "--mode",
                   "work_us": "--work-us", "trace_threshold_us": "--trace-threshold-us",
                   "trace_breaches": "--trace-breaches", "trace_history_ms": "--trace-history-ms"}
    # The bare-metal image's timer interrupt latency (probe/baremetal/irqlat.c).
    freestanding_options = ("--interval-us", "--duration-s", "--loops", "--threshold-us")

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
