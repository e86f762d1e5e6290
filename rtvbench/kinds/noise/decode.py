"""The `noise` kind: OS noise from the probe's merged `cpu: "all"` result and each CPU's own.

Figures (merged, and per CPU as `cpu<N>.<figure>`):
  `noise_per_s_us` (`_ns`)        time lost to interruptions per second of run (per CPU: the mean over CPUs)
  `noise_percent`                 the same as a share of the run
  `noise_us` (`_ns`, `_ms`)       time lost in the whole run
  `events`, `events_per_s`        gaps above the threshold, in all and per second
  `min_ns`, `avg_us`, `max_us`, `p99_us` ... (`_ns`, `_us`, `_ms`)  the gaps between clock reads:
                                  the minimum is the loop's own cost, the maximum the longest interruption
  `count`                         clock reads (gaps recorded)
The distribution `gap` is the probe's histogram of every gap.
"""

from __future__ import annotations

from typing import Any

from rtvbench.analysis.time_figures import add_time_figures
from rtvbench.analysis.kind import Kind, Result, decode_per_cpu, per_cpu_figures, record_count, register
from rtvbench.analysis.quantities import cell_medians, differences
from rtvbench.analysis.quantities import number as _num
from rtvbench.results import Measurement
from rtvbench.units import PERCENTILES, TIME_STEMS, TIME_UNITS
from rtvbench.units import exact_duration

GAP_STEMS = TIME_STEMS
NOISE_UNITS = TIME_UNITS
PER_S_UNITS = {"ns": 1.0, "us": 1e3}
COUNTS = ("count", "events", "events_per_s")
#: the distribution of the merged result
GAP = "gap"


#: the figures of each cell's sentence in the consideration
SUMMARY = ("max_us", "noise_per_s_us", "noise_percent", "events_per_s", "min_ns")

class NoiseKind(Kind):
    name = "noise"
    per_cpu = True
    table_figures = ("count", "events", "min_ns", "p99_us", "p9999_us", "max_us", "noise_per_s_us",
                     "noise_percent")
    comparison_figures = ("noise_per_s_us", "noise_percent", "events_per_s", "p9999_us", "p999999_us", "max_us")

    def is_figure(self, figure: str) -> bool:
        if figure in COUNTS or figure == "noise_percent":
            return True
        stem, _, unit = figure.rpartition("_")
        if stem == "noise":
            return unit in NOISE_UNITS
        if stem == "noise_per_s":
            return unit in PER_S_UNITS
        return stem in GAP_STEMS and unit in TIME_UNITS

    def decode(self, m: Measurement) -> Result:
        # Parsing the distributions takes numpy, which `show` (all_figures) starts without.
        from rtvbench.analysis.histogram import result_histogram

        return decode_per_cpu(m, _figures, lambda r: {GAP: result_histogram(r)})

    def all_figures(self, m: Measurement) -> dict[str, float]:
        return per_cpu_figures(m, _figures)

    def figures(self, m: Measurement) -> dict[str, float]:
        r = m.result("all")
        return _figures(r) if r is not None else {}

    def stable_figures(self, present: list[str]) -> list[str]:
        # The loop's own cost and the body of the gaps should not move between repetitions; how
        # much is stolen, and the longest interruption, legitimately do.
        return ["min_ns", "p99_us"]

    def row_figures(self, present: list[str]) -> list[str]:
        return list(self.table_figures)

    def samples_needed(self, figure: str) -> int:
        # A percentile p is only a percentile when at least one sample lies beyond it.
        stem = figure.rpartition("_")[0]
        if stem in PERCENTILES:
            return round(1 / (1 - PERCENTILES[stem] / 100))
        return 1

    def is_extreme(self, figure: str) -> bool:
        return figure == "max_us" or figure.startswith("max_")

    def sample_count(self, m: Measurement) -> int | None:
        return record_count(m.result("all"))

    def considerations(self, data, bench: str, comps: list,
                       analysed: Any = None) -> list[tuple[str, str, str]]:
        return cell_medians(self, data, bench, SUMMARY) + differences(self, comps)

    def unit(self, figure: str) -> str:
        if figure == "noise_percent":
            return "%"
        if figure == "events_per_s":
            return "/s"
        if figure.startswith("noise_per_s_"):
            return figure.rpartition("_")[2] + "/s"
        return super().unit(figure)

    def label(self, figure: str) -> str:
        fixed = {"count": "clock reads", "events": "interruptions", "events_per_s": "interruptions per second",
                 "noise_percent": "noise share"}
        if figure in fixed:
            return fixed[figure]
        stem, _, _ = figure.rpartition("_")
        if stem == "noise":
            return "noise in the run"
        if stem == "noise_per_s":
            return "noise per second"
        if stem in PERCENTILES:
            return f"gap p{PERCENTILES[stem]:g}"
        return {"min": "gap min (loop cost)", "max": "longest gap"}.get(stem, f"gap {stem}")

    def describe(self, benchmark: dict[str, Any], params: dict[str, Any] | None) -> str:
        p = params or {}
        duration_ns = p.get("duration_ns") or _scaled(benchmark.get("duration_s"), 1e9)
        threshold_ns = p.get("threshold_ns") or _scaled(benchmark.get("threshold_us"), 1e3) or 1000
        priority = p.get("priority", benchmark.get("priority"))
        policy = p.get("policy") or benchmark.get("policy")
        cpus = p.get("cpus") or benchmark.get("cpus")
        text = ("OS noise: on each measured CPU one pinned thread spins reading the monotonic clock and records "
                "every gap between two consecutive reads. The smallest gap is the loop's own cost; a gap longer "
                f"than {exact_duration(threshold_ns)} is an interruption (an interrupt, a kernel thread, another "
                "task, the hypervisor), and what it lasted beyond the smallest gap is time stolen from the task. "
                "Unlike a wake-up latency test it sees every interruption of a running CPU, not only those that "
                "delay a timer wake-up. ")
        how = []
        if duration_ns:
            how.append(f"for {exact_duration(duration_ns)}")
        if policy and policy != "other" and priority is not None:
            how.append(f"under SCHED_{str(policy).upper()} priority {priority}")
        elif policy == "other":
            how.append("at normal priority")
        if cpus:
            many = isinstance(cpus, list) and len(cpus) != 1
            how.append(f"on CPU{'s' if many else ''} {', '.join(map(str, cpus)) if isinstance(cpus, list) else cpus}")
        if how:
            text += f"Each measurement runs {' '.join(how)}. "
        return text + ("Percentiles of the gaps come from the probe's log-linear histogram (within 1 % of exact); "
                       "min, max, the noise and the interruption count are exact.")


def _figures(r: dict[str, Any]) -> dict[str, float]:
    """The figures of one result record (merged or one CPU's)."""
    out: dict[str, float] = {}
    for key in ("count", "events"):
        v = r.get(key)
        if isinstance(v, int) and not isinstance(v, bool):
            out[key] = v
    span = _num(r.get("span_ns"))
    if span and "events" in out:
        out["events_per_s"] = out["events"] * 1e9 / span
    if not out.get("count"):
        return out       # no gap recorded: every time figure would be null
    add_time_figures(out, r)
    noise = _num(r.get("noise_ns"))
    if noise is not None:
        for unit, scale in NOISE_UNITS.items():
            out[f"noise_{unit}"] = noise / scale
    per_s = _num(r.get("noise_per_s_ns"))
    if per_s is not None:
        for unit, scale in PER_S_UNITS.items():
            out[f"noise_per_s_{unit}"] = per_s / scale
    share = _num(r.get("noise_percent"))
    if share is not None:
        out["noise_percent"] = share
    return out


def _scaled(value: Any, factor: float) -> float | None:
    return value * factor if isinstance(value, (int, float)) and not isinstance(value, bool) else None


register(NoiseKind())
