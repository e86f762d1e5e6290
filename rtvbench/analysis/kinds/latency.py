"""The `latency` kind: timer wake-up latency, from the probe's merged `cpu: "all"` result.

With a work budget (`work_us`, the "victim" of interference tests) the result also carries
response times (work completion - deadline) and deadline misses; they become the figures
`response_<stat>_{ns,us,ms}` and `deadline_misses`, present only in such runs."""

from __future__ import annotations

import re
from typing import Any

from rtvbench.analysis.histogram import Histogram, HistogramError
from rtvbench.analysis.kinds import Kind, register
from rtvbench.results import Measurement

#: figure stem -> percent, in the probe's naming (p999 = 99.9 %)
PERCENTILES: dict[str, float] = {
    "p50": 50.0, "p90": 90.0, "p99": 99.0, "p999": 99.9,
    "p9999": 99.99, "p99999": 99.999, "p999999": 99.9999,
}
TIME_STEMS = ("min", "avg", "max", "stddev", *PERCENTILES)
TIME_UNITS = {"ns": 1.0, "us": 1e3, "ms": 1e6}
_OVER = re.compile(r"over_(\d+(?:\.\d+)?)us")
#: prefix of the response-time figures of a run with a work budget
RESPONSE = "response_"
#: response figures compared between loads and environments, when the runs have them
RESPONSE_COMPARED = ("response_avg_us", "response_p99_us", "response_p999_us", "response_max_us")


def over_figure(threshold_ns: int) -> str:
    """Figure name for the count of samples above a threshold given in ns."""
    us = threshold_ns / 1000
    text = str(threshold_ns // 1000) if threshold_ns % 1000 == 0 else f"{us:.3f}".rstrip("0")
    return f"over_{text}us"


def over_threshold_ns(figure: str) -> float | None:
    m = _OVER.fullmatch(figure)
    return float(m.group(1)) * 1000 if m else None


class LatencyKind(Kind):
    name = "latency"
    table_figures = ("count", "missed", "min_us", "avg_us", "p99_us", "p9999_us", "max_us")
    comparison_figures = ("min_us", "avg_us", "p50_us", "p99_us", "p999_us", "p9999_us", "max_us")
    # The max is one sample and legitimately jumpy; the body of the distribution should not be.
    stability_figures = ("avg_us", "p99_us")
    tail_figures = ("p99_us", "p999_us", "p9999_us", "p99999_us", "p999999_us")

    def is_figure(self, figure: str) -> bool:
        if figure in ("count", "missed", "deadline_misses") or _OVER.fullmatch(figure):
            return True
        if figure.startswith(RESPONSE):
            figure = figure[len(RESPONSE):]
        stem, _, unit = figure.rpartition("_")
        return stem in TIME_STEMS and unit in TIME_UNITS

    def compared_figures(self, present: list[str]) -> list[str]:
        return list(self.comparison_figures) + [f for f in RESPONSE_COMPARED if f in present]

    def row_figures(self, present: list[str]) -> list[str]:
        """The per-repetition table's columns: wake-up latency, plus the response time and
        deadline misses when the runs had a work budget."""
        extra = [f for f in ("deadline_misses", "response_avg_us", "response_p99_us", "response_max_us")
                 if f in present]
        return list(self.table_figures) + extra

    def figures(self, m: Measurement) -> dict[str, float]:
        r = m.result("all")
        if r is None:
            return {}
        out: dict[str, float] = {}
        for key in ("count", "missed"):
            if isinstance(r.get(key), (int, float)):
                out[key] = r[key]
        for threshold, count in (r.get("over") or {}).items():
            try:
                out[over_figure(int(threshold))] = count
            except ValueError:
                continue   # a threshold key the schema does not allow; skip rather than guess
        response = r.get("response")
        if isinstance(response, dict) and isinstance(r.get("deadline_misses"), (int, float)):
            out["deadline_misses"] = r["deadline_misses"]
        if not out.get("count"):
            return out      # no samples: every time figure would be null
        self._times(out, r, self.histogram(m), "")
        if isinstance(response, dict) and response.get("count"):
            self._times(out, response, self.response_histogram(m), RESPONSE)
        return out

    @staticmethod
    def _times(out: dict[str, float], r: dict[str, Any], hist: Histogram | None, prefix: str) -> None:
        for stem in TIME_STEMS:
            ns = r.get(f"{stem}_ns")
            if ns is None and stem in PERCENTILES and hist is not None:
                ns = hist.percentile(PERCENTILES[stem])
            if ns is None:
                continue
            for unit, scale in TIME_UNITS.items():
                out[f"{prefix}{stem}_{unit}"] = ns / scale

    def samples_needed(self, figure: str) -> int:
        # A percentile p is only a percentile when at least one sample lies beyond it:
        # with n < 1 / (1 - p) samples the "p99.999" is merely the sample maximum.
        stem = figure.removeprefix(RESPONSE).rpartition("_")[0]
        if stem in PERCENTILES:
            return round(1 / (1 - PERCENTILES[stem] / 100))
        return 1

    def sample_count(self, m: Measurement) -> int | None:
        r = m.result("all")
        return r.get("count") if r else None

    def histogram(self, m: Measurement) -> Histogram | None:
        return _histogram(m.result("all"))

    def response_histogram(self, m: Measurement) -> Histogram | None:
        """The distribution of response times, in runs with a work budget."""
        r = m.result("all")
        return _histogram(r.get("response") if r else None)

    def label(self, figure: str) -> str:
        if figure in ("count", "missed"):
            return figure
        if figure == "deadline_misses":
            return "deadline misses"
        if figure.startswith(RESPONSE):
            return "response " + self.label(figure[len(RESPONSE):])
        t = over_threshold_ns(figure)
        if t is not None:
            return f"samples > {t / 1000:g} us"
        stem, _, unit = figure.rpartition("_")
        if stem in PERCENTILES:
            return f"p{PERCENTILES[stem]:g}"
        return stem

    def describe(self, benchmark: dict[str, Any], params: dict[str, Any] | None) -> str:
        p = params or {}
        interval_ns = p.get("interval_ns") or _scaled(benchmark.get("interval_us"), 1000)
        duration_ns = p.get("duration_ns") or _scaled(benchmark.get("duration_s"), 1e9)
        loops = p.get("loops") or benchmark.get("loops")
        priority = p.get("priority", benchmark.get("priority"))
        policy = p.get("policy") or ("fifo" if priority else None)
        mode = p.get("mode") or benchmark.get("mode") or "abstime"
        cpus = p.get("cpus") or benchmark.get("cpus")
        work_ns = p.get("work_ns") or _scaled(benchmark.get("work_us"), 1000)

        period = _human_ns(interval_ns) if interval_ns else "one interval"
        if mode == "relative":
            method = (f"sleeps {period} from the moment each activation starts and records how much later than "
                      "that it wakes up (the periodic response-time method)")
        else:
            method = (f"sleeps until an absolute deadline every {period} (clock_nanosleep with TIMER_ABSTIME, "
                      "as cyclictest does) and records how late it wakes up (wake-up time minus deadline)")
        text = ("Timer wake-up latency and jitter: on each measured CPU one pinned thread " + method + ". "
                "A wake-up later than a whole interval counts the periods it swallowed as missed. ")
        if work_ns:
            text += (f"After each wake-up the thread runs a fixed amount of work calibrated at start to take "
                     f"{_human_ns(work_ns)} undisturbed (a periodic task with a work budget, the victim of the "
                     "interference): its response time is work completion minus deadline, and an activation "
                     "whose response time exceeds the interval is a deadline miss. ")
        how_long = []
        if duration_ns:
            how_long.append(f"for {_human_ns(duration_ns)}")
        if loops:
            how_long.append(f"for at most {loops} activations")
        sched = f"under SCHED_{str(policy).upper()} priority {priority}" if policy and priority is not None else ""
        where = f"on CPU{'s' if isinstance(cpus, list) and len(cpus) != 1 else ''} {_cpu_list(cpus)}" if cpus else ""
        tail = " ".join(x for x in [" ".join(how_long), sched, where] if x)
        if tail:
            text += f"Each measurement runs {tail}. "
        text += ("Percentiles come from the probe's log-linear histogram (within 1 % of exact); "
                 "min, max and mean are exact.")
        return text


def _histogram(r: dict[str, Any] | None) -> Histogram | None:
    if not isinstance(r, dict) or not r.get("histogram"):
        return None
    try:
        return Histogram.from_record(r["histogram"], r.get("min_ns"), r.get("max_ns"))
    except HistogramError:
        return None


def _scaled(value: Any, factor: float) -> float | None:
    return value * factor if isinstance(value, (int, float)) else None


def _human_ns(ns: float) -> str:
    if ns >= 1e9:
        return f"{ns / 1e9:g} s"
    if ns >= 1e6:
        return f"{ns / 1e6:g} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:g} us"
    return f"{ns:g} ns"


def _cpu_list(cpus: Any) -> str:
    if isinstance(cpus, list):
        return ", ".join(str(c) for c in cpus)
    return str(cpus)


register(LatencyKind())
