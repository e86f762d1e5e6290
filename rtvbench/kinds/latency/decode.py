"""The `latency` kind: timer wake-up latency, from the probe's merged `cpu: "all"` result.

With a work budget (`work_us`, the "victim" of interference tests) the result also carries
response times (work completion - deadline) and deadline misses; they become the figures
`response_<stat>_{ns,us,ms}` and `deadline_misses`, present only in such runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rtvbench.analysis.time_figures import add_time_figures
from rtvbench.analysis.kind import Kind, Result, decode_per_cpu, per_cpu_figures, record_count, register
from rtvbench.units import counted, exact_duration, verb
from rtvbench.kinds.latency.names import OVER, RESPONSE, RESPONSE_COMPARED, over_figure, over_threshold_ns
from rtvbench.results import Measurement
from rtvbench.units import PERCENTILES, TIME_STEMS, TIME_UNITS


@dataclass(frozen=True)
class LatencyAnalyses:
    """A latency benchmark's analyses beyond figures and comparisons (Evaluation.extras[bench])."""
    # Their types live in the modules that compute them, which analyse() imports: `show` only decodes.
    rankings: list      # interference.Ranking: the loads by the degradation they caused, per environment
    matrix: list        # interference.MatrixRow: response times and deadline misses per environment and load
    tails: list         # tails.CellTail: each cell's tail, coverage and extrapolation
    spikes: list        # spikes.CellSpikes: each cell's traced spikes and their causes

class LatencyKind(Kind):
    name = "latency"
    table_figures = ("count", "missed", "min_us", "avg_us", "p99_us", "p9999_us", "max_us")
    comparison_figures = ("min_us", "avg_us", "p50_us", "p99_us", "p999_us", "p9999_us", "max_us")
    # The max is one sample and legitimately jumpy; the body of the distribution should not be.
    tail_figures = ("p99_us", "p999_us", "p9999_us", "p99999_us", "p999999_us")

    def is_figure(self, figure: str) -> bool:
        if figure in ("count", "missed", "deadline_misses", RESPONSE + "count") or OVER.fullmatch(figure):
            return True
        if figure.startswith(RESPONSE):
            figure = figure[len(RESPONSE):]
        stem, _, unit = figure.rpartition("_")
        return stem in TIME_STEMS and unit in TIME_UNITS

    def stable_figures(self, present: list[str]) -> list[str]:
        # The body of the distribution should not move between repetitions; the tail legitimately does.
        return ["avg_us", "p99_us"]

    def compared_figures(self, present: list[str]) -> list[str]:
        return list(self.comparison_figures) + [f for f in RESPONSE_COMPARED if f in present]

    def row_figures(self, present: list[str]) -> list[str]:
        """The per-repetition table's columns: wake-up latency, plus the response time and
        deadline misses when the runs had a work budget."""
        extra = [f for f in ("deadline_misses", "response_avg_us", "response_p99_us", "response_max_us")
                 if f in present]
        return list(self.table_figures) + extra

    per_cpu = True

    def decode(self, m: Measurement) -> Result:
        """Merged figures from the `cpu: "all"` result, each CPU's from its own result record (as
        `cpu<N>.<figure>`), the wake-up (and response) distributions, and the largest wake-up of any
        CPU per window as a time series."""
        # Parsing the distributions takes numpy, which `show` (all_figures) starts without.
        from rtvbench.analysis.histogram import result_histogram

        out = decode_per_cpu(m, self._result_figures, lambda r: {
            "wake-up": result_histogram(r), "response": result_histogram(r.get("response"))})
        for key, name in (("max_ns", "max_us"), ("response_max_ns", "response_max_us")):
            points = _window_maxima(m.window_records, key)
            if points:
                out.series[name] = points
        return out

    def all_figures(self, m: Measurement) -> dict[str, float]:
        return per_cpu_figures(m, self._result_figures)

    def figures(self, m: Measurement) -> dict[str, float]:
        r = m.result("all")
        return self._result_figures(r) if r is not None else {}

    def _result_figures(self, r: dict[str, Any]) -> dict[str, float]:
        """The figures of one result record (merged or one CPU's)."""
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
        add_time_figures(out, r)
        if isinstance(response, dict) and response.get("count"):
            out[RESPONSE + "count"] = response["count"]
            add_time_figures(out, response, RESPONSE)
        return out

    def considerations(self, data, bench: str, comps: list,
                       analysed: LatencyAnalyses | None = None) -> list[tuple[str, str, str]]:
        from rtvbench.kinds.latency import considerations, interference, tails

        a = analysed if isinstance(analysed, LatencyAnalyses) else self.analyse(data, bench)
        found = considerations.considerations(data, bench, self, comps)
        found += interference.ranking_findings(a.rankings, self.label)
        out = [(f.severity, f.topic, f.text) for f in found]
        out += [("info", "tail", text) for text in tails.tail_sentences(a.tails, bench)]
        return out + [("info", "spikes", text) for text in _spike_sentences(a.spikes, comps)]

    def analyse(self, data, bench: str) -> LatencyAnalyses:
        # The analyses of the whole benchmark are imported where they run, not with the decoder that
        # `show` imports to decode measurements only.
        from rtvbench.kinds.latency import interference, spikes, tails

        return LatencyAnalyses(interference.rankings(data, bench), interference.response_matrix(data, bench),
                               tails.cell_tails(data, bench), spikes.cell_spikes(data, bench))

    def samples_needed(self, figure: str) -> int:
        # A percentile p is only a percentile when at least one sample lies beyond it:
        # with n < 1 / (1 - p) samples the "p99.999" is merely the sample maximum.
        stem = figure.removeprefix(RESPONSE).rpartition("_")[0]
        if stem in PERCENTILES:
            return round(1 / (1 - PERCENTILES[stem] / 100))
        return 1

    def is_extreme(self, figure: str) -> bool:
        return figure.removeprefix(RESPONSE) == "max_us"

    def sample_count(self, m: Measurement) -> int | None:
        return record_count(m.result("all"))

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

        period = exact_duration(interval_ns) if interval_ns else "one interval"
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
                     f"{exact_duration(work_ns)} undisturbed (a periodic task with a work budget, the victim of the "
                     "interference): its response time is work completion minus deadline, and an activation "
                     "whose response time exceeds the interval is a deadline miss. ")
        how_long = []
        if duration_ns:
            how_long.append(f"for {exact_duration(duration_ns)}")
        if loops:
            how_long.append(f"for at most {counted(loops, 'activation')}")
        sched = f"under SCHED_{str(policy).upper()} priority {priority}" if policy and priority is not None else ""
        where = f"on CPU{'s' if isinstance(cpus, list) and len(cpus) != 1 else ''} {_cpu_list(cpus)}" if cpus else ""
        tail = " ".join(x for x in [" ".join(how_long), sched, where] if x)
        if tail:
            text += f"Each measurement runs {tail}. "
        text += ("Percentiles come from the probe's log-linear histogram (within 1 % of exact); "
                 "min, max and mean are exact.")
        return text


#: a window shorter than this share of the full window length is a partial one (the end of the run)
PARTIAL_WINDOW = 0.9


def _window_maxima(windows: list, key: str) -> list[tuple[float, float]]:
    """(end of the window in s, the largest `key` of any CPU in that window, in us), in window order, of
    the measurement's records.Window.

    The last window of a run is usually cut short by its end: the largest of its few wake-ups is
    not comparable with a full window's (the per-window line would drop at the end for no reason),
    so windows shorter than PARTIAL_WINDOW of the longest are left out of the series. Their samples
    still count in every figure."""
    full = max((w.length_ns for w in windows if w.length_ns is not None), default=None)
    per_index: dict[int, tuple[float, float]] = {}
    for w in windows:
        value = w.values.get(key)
        if value is None or w.index is None:
            continue
        if full and w.length_ns is not None and w.length_ns < PARTIAL_WINDOW * full:
            continue
        t_end = (w.t_end_ns or 0) / 1e9
        prev = per_index.get(w.index)
        per_index[w.index] = (t_end, value / 1000 if prev is None else max(prev[1], value / 1000))
    return [per_index[i] for i in sorted(per_index)]


def _scaled(value: Any, factor: float) -> float | None:
    return value * factor if isinstance(value, (int, float)) else None


def _cpu_list(cpus: Any) -> str:
    if isinstance(cpus, list):
        return ", ".join(str(c) for c in cpus)
    return str(cpus)


register(LatencyKind())


def _spike_sentences(cells: list, comps: list) -> list[str]:
    """What the traces say per cell (the leading cause), then cause by cause for each compared pair."""
    from rtvbench.kinds.latency import spikes
    from rtvbench.kinds.latency.attribution import CAUSE_WORD, CAUSE_WORDS

    out = []
    for c in cells:
        if not c.spikes:
            if c.untraced:
                out.append(f"`{c.environment}` under `{c.load}`: {counted(c.untraced, 'wake-up')} exceeded the trace "
                           "threshold but none was traced (see the probe's warnings).")
            continue
        counts = sorted(c.counts.items(), key=lambda kv: -kv[1])
        listed = ", ".join(counted(n, CAUSE_WORD[cause], CAUSE_WORDS[cause]) for cause, n in counts)
        more = (f"; {counted(c.untraced, 'more breach', 'more breaches')} {verb(c.untraced, 'was', 'were')} not "
                "traced" if c.untraced else "")
        out.append(f"`{c.environment}` under `{c.load}`: {counted(len(c.spikes), 'traced spike')}: {listed}{more}.")
    pairs = []
    for comp in comps:
        key = (comp.axis, comp.context, comp.baseline, comp.candidate)
        if key in [p[0] for p in pairs]:
            continue
        words = (f"`{comp.candidate}` against `{comp.baseline}` under `{comp.context}`" if comp.axis == "environment"
                 else f"`{comp.candidate}` against `{comp.baseline}` in `{comp.context}`")
        pairs.append((key, (words, comp.baseline_environment, comp.baseline_load, comp.candidate_environment,
                            comp.candidate_load)))
    return out + spikes.comparison_sentences(cells, [p[1] for p in pairs])
