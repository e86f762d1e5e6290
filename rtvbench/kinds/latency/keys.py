"""The `latency` benchmark's campaign keys, as a pydantic model: what the campaign validates (params.py
builds the probe command from it), and what the kind's analysis and report read their parameters
through (of()), instead of indexing the stored dict by name."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import model_validator

from rtvbench.cpulist import probe_cpus
from rtvbench.params import DEFAULT_RT_PRIORITY, RealtimeThreads, probe_int, probe_list, probe_number

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
        capture_keys = [k for k in ("trace_breaches", "trace_history_ms") if k in self.model_fields_set]
        if capture_keys and self.trace_threshold_us is None:
            one = len(capture_keys) == 1
            raise ValueError(f"{' and '.join(capture_keys)} {'shapes' if one else 'shape'} the trace capture, which "
                             "trace_threshold_us switches on: add trace_threshold_us (the wake-up latency that saves "
                             f"a trace) or drop {'it' if one else 'them'}")
        if self.work_us is not None and self.work_us >= self.interval_us:
            raise ValueError(f"work_us ({self.work_us}) must be shorter than interval_us ({self.interval_us}): "
                             "a work budget of a whole period or more misses every deadline")
        return self


def of(params: dict[str, Any] | None) -> LatencyParams | None:
    """A stored benchmark's keys (its resolved spec: every default filled in, validated when it ran),
    typed; None when the run's spec does not have the benchmark. Not validated again: a run stored by
    an older rtvbench is read as it was, a key this version does not know left out."""
    if not params:
        return None
    return LatencyParams.model_construct(**{k: v for k, v in params.items() if k in LatencyParams.model_fields})
