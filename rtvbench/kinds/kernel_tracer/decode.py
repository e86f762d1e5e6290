"""The `kernel-tracer` kind: the kernel tracers' summaries as figures, merged and per CPU.

timerlat (the timer's interrupt and the woken kernel thread, each activation):
  `irq_<stat>_us`, `thread_<stat>_us` (`_ns`, `_ms` too) for min, avg, p50, p90, p99, p999, max:
  how late the timer interrupt ran, and how late the thread it woke ran; `count` activations.
  The thread latency includes the IRQ latency: their difference is the scheduling part.
osnoise (the tracer's thread, each period):
  `noise_percent` the share of the run lost, `noise_per_s_us` the same per second, `max_single_noise_us`
  the longest single interruption, `hw_events`, `nmi_events`, `irq_events`, `softirq_events`,
  `thread_events` what interrupted it (hardware noise is time lost with nothing in the kernel to
  show for it: SMIs, or the hypervisor); `count` periods.
hwlat (one CPU at a time spinning with interrupts off for `width` of every `window`):
  `hwlat_<stat>_us` (`_ns`, `_ms` too) over its detections, each the longest gap of a window longer than
  the threshold: time the machine was taken from the kernel (firmware, SMIs, a hypervisor);
  `detections` how many windows had one; `window_us`, `width_us`, `threshold_us` what the kernel ran it
  with (the merged result only).
The distributions are the IRQ and the thread latency (timerlat) and the hardware gaps (hwlat).
"""

from __future__ import annotations

from typing import Any

from rtvbench.analysis.histogram import result_histogram
from rtvbench.analysis.kind import Kind, Result, decode_per_cpu, record_count, register
from rtvbench.analysis.quantities import cell_medians, differences
from rtvbench.analysis.quantities import number as _number
from rtvbench.results import Measurement
from rtvbench.units import TIME_UNITS
from rtvbench.units import exact_duration

STATS = {"min": None, "avg": None, "p50": 50.0, "p90": 90.0, "p99": 99.0, "p999": 99.9, "max": None}
#: the probe's record key of each latency -> its figures' prefix
CONTEXTS = {"irq": "irq", "thread": "thread", "gap": "hwlat"}
EVENTS = ("hw_events", "nmi_events", "irq_events", "softirq_events", "thread_events")
DISTRIBUTIONS = {"irq": "IRQ latency", "thread": "thread latency", "gap": "hardware latency"}
#: what hwlat ran with, as the kernel read it back
HWLAT_SETTINGS = ("window_us", "width_us", "threshold_us")


#: the figures of each cell's sentence in the consideration
SUMMARY = ("irq_max_us", "thread_max_us", "noise_percent", "max_single_noise_us", "hw_events", "hwlat_max_us",
           "detections")

class KernelTracerKind(Kind):
    name = "kernel-tracer"
    per_cpu = True
    table_figures = ("count", "irq_avg_us", "irq_p99_us", "irq_max_us", "thread_avg_us", "thread_p99_us",
                     "thread_max_us", "noise_percent", "max_single_noise_us", *EVENTS, "detections",
                     "hwlat_avg_us", "hwlat_max_us", *HWLAT_SETTINGS)
    comparison_figures = ("irq_avg_us", "irq_p99_us", "irq_max_us", "thread_avg_us", "thread_p99_us",
                          "thread_max_us", "noise_percent", "max_single_noise_us", "hwlat_max_us", "detections")

    def is_figure(self, figure: str) -> bool:
        if figure in ("count", "noise_percent", "detections", *EVENTS, *HWLAT_SETTINGS):
            return True
        stem, _, unit = figure.rpartition("_")
        if stem in ("noise_per_s", "max_single_noise"):
            return unit in TIME_UNITS
        context, _, stat = stem.partition("_")
        return context in CONTEXTS.values() and stat in STATS and unit in TIME_UNITS

    def decode(self, m: Measurement) -> Result:
        # The thread latency first: it is each CPU's main distribution (what a woken task sees).
        return decode_per_cpu(m, _figures, lambda r: {
            DISTRIBUTIONS[c]: result_histogram(r[c]) if isinstance(r.get(c), dict) else None
            for c in ("thread", "irq", "gap")})

    def figures(self, m: Measurement) -> dict[str, float]:
        r = m.result("all")
        return _figures(r) if r is not None else {}

    def row_figures(self, present: list[str]) -> list[str]:
        return [f for f in self.table_figures if f in present]

    def compared_figures(self, present: list[str]) -> list[str]:
        return [f for f in self.comparison_figures if f in present]

    def stable_figures(self, present: list[str]) -> list[str]:
        return [f for f in ("irq_avg_us", "thread_avg_us", "noise_percent") if f in present]

    def samples_needed(self, figure: str) -> int:
        stem = figure.rpartition("_")[0].partition("_")[2]
        pct = STATS.get(stem)
        return round(1 / (1 - pct / 100)) if pct else 1

    def is_extreme(self, figure: str) -> bool:
        return "_max_" in figure or figure.startswith("max_single_noise")

    def sample_count(self, m: Measurement) -> int | None:
        return record_count(m.result("all"))

    def unit(self, figure: str) -> str:
        if figure == "noise_percent":
            return "%"
        if figure.startswith("noise_per_s_"):
            return figure.rpartition("_")[2] + "/s"
        return super().unit(figure)

    def label(self, figure: str) -> str:
        fixed = {"count": "samples", "noise_percent": "noise share", "hw_events": "hardware noise events",
                 "nmi_events": "NMIs", "irq_events": "interrupts", "softirq_events": "softirqs",
                 "thread_events": "thread preemptions", "detections": "hardware latency detections",
                 "window_us": "hwlat window", "width_us": "hwlat width", "threshold_us": "hwlat threshold"}
        if figure in fixed:
            return fixed[figure]
        stem = figure.rpartition("_")[0]
        if stem == "noise_per_s":
            return "noise per second"
        if stem == "max_single_noise":
            return "longest single noise"
        context, _, stat = stem.partition("_")
        return f"{ {'irq': 'IRQ', 'thread': 'thread', 'hwlat': 'hardware'}[context]} latency {stat}"

    def describe(self, benchmark: dict[str, Any], params: dict[str, Any] | None) -> str:
        p = params or {}
        tracer = p.get("tracer") or benchmark.get("tracer") or "timerlat"
        duration = p.get("duration_ns") or (benchmark.get("duration_s") or 10) * 1e9
        if tracer == "hwlat":
            window = p.get("window_us") or benchmark.get("window_us") or 1_000_000
            width = p.get("width_us") or benchmark.get("width_us") or 500_000
            threshold = p.get("threshold_us") or benchmark.get("threshold_us") or 10
            return ("The kernel's hwlat tracer: one CPU at a time, a kernel thread spins with interrupts off for "
                    f"{exact_duration(width * 1000)} of every {exact_duration(window * 1000)}, reading the clock, "
                    f"and reports each window whose longest gap between two reads exceeded "
                    f"{exact_duration(threshold * 1000)}, for {exact_duration(duration)}. With interrupts off "
                    "nothing in the kernel can take the CPU: a gap is time the machine was taken from the "
                    "kernel, by firmware (SMIs) or a hypervisor.")
        if tracer == "timerlat":
            period = p.get("period_us") or benchmark.get("period_us") or 1000
            return ("The kernel's timerlat tracer: on each CPU a kernel thread is woken by a timer every "
                    f"{exact_duration(period * 1000)}, and the kernel records how late the timer's interrupt ran "
                    "(IRQ latency) and how late the woken thread ran (thread latency, which includes the IRQ "
                    f"latency), for {exact_duration(duration)}. Measured inside the kernel, it separates what "
                    "delays the interrupt (interrupts disabled, the hypervisor) from what delays the scheduling.")
        return ("The kernel's osnoise tracer: on each CPU a kernel thread runs with preemption enabled and "
                "accounts every interruption by its source (hardware, NMI, interrupt, softirq, thread), for "
                f"{exact_duration(duration)}; hardware noise is time lost with nothing in the kernel to show "
                "for it (firmware, or a hypervisor taking the CPU).")

    def considerations(self, data, bench: str, comps: list,
                       analysed: Any = None) -> list[tuple[str, str, str]]:
        return cell_medians(self, data, bench, SUMMARY) + differences(self, comps)


def _figures(r: dict[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    if record_count(r) is not None:
        out["count"] = record_count(r)
    for key, prefix in CONTEXTS.items():
        sub = r.get(key)
        if not isinstance(sub, dict):
            continue
        if key == "gap":
            # No detection is a finding of hwlat, not a missing figure.
            out["detections"] = _number(sub.get("count")) or 0
        if not sub.get("count"):
            continue
        for stat in STATS:
            ns = _number(sub.get(f"{stat}_ns"))
            if ns is None:
                continue
            for unit, scale in TIME_UNITS.items():
                out[f"{prefix}_{stat}_{unit}"] = ns / scale
    for name in HWLAT_SETTINGS:
        v = _number(r.get(name))
        if v is not None:
            out[name] = v
    runtime, noise = _number(r.get("runtime_ns")), _number(r.get("noise_ns"))
    if runtime:
        out["noise_percent"] = 100.0 * (noise or 0.0) / runtime
        for unit, scale in TIME_UNITS.items():
            out[f"noise_per_s_{unit}"] = (noise or 0.0) / runtime * 1e9 / scale
    single = _number(r.get("max_single_noise_ns"))
    if single is not None and runtime:
        for unit, scale in TIME_UNITS.items():
            out[f"max_single_noise_{unit}"] = single / scale
    for name in EVENTS:
        v = _number(r.get(name))
        if v is not None and runtime:
            out[name] = v
    return out


register(KernelTracerKind())
