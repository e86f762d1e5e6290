"""The `rtos` kind: per-operation costs of RTOS-like primitives, one `result` record per test
(docs/probe/rtos.md); figure names in rtvbench/kinds/rtos/names.py.

Every figure is a time, lower is better. The distribution of each test is its histogram, named by
the test. A result that ended in an error (`error`) still yields the figures of the operations it
measured; the probe's `error` and its warnings reach the consideration through the findings.
"""

from __future__ import annotations

from typing import Any

from rtvbench.analysis.histogram import result_histogram
from rtvbench.analysis.time_figures import add_time_figures
from rtvbench.analysis.kind import Kind, Result, record_count, register
from rtvbench.analysis.quantities import cell_medians, differences
from rtvbench.kinds.rtos.names import (ALL_TESTS, HALF_STEMS, PINGPONG_PARTS, PORT_RUN_TESTS, RTOS_TESTS, TABLE_STATS,
                                       figure, row, row_words, split, stat_words)
from rtvbench.results import Measurement
from rtvbench.units import PERCENTILES, TIME_UNITS, counted, exact_duration


def _tests(m: Measurement) -> list[dict[str, Any]]:
    """The measurement's result records of known tests that measured something."""
    return [r for r in m.results
            if isinstance(r.get("test"), str) and r["test"] in ALL_TESTS and (record_count(r) or 0) > 0]


def _half(out: dict[str, float], half: Any) -> None:
    if not isinstance(half, dict):
        return
    for stem in HALF_STEMS:
        v = half.get(f"{stem}_ns")
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            for unit, scale in TIME_UNITS.items():
                out[figure("sem_pingpong.half", stem, unit)] = v / scale


def result_figures(r: dict[str, Any]) -> dict[str, float]:
    """The figures of one test's result record."""
    out: dict[str, float] = {}
    test = r["test"]
    add_time_figures(out, r, prefix=f"{test}.")
    if test == "sem_pingpong":
        _half(out, r.get("half_round_trip"))
        for part in ("forward", "back"):
            if isinstance(r.get(part), dict) and (record_count(r[part]) or 0) > 0:
                add_time_figures(out, r[part], prefix=f"{test}.{part}.")
    return out


def rows(present: list[str]) -> list[str]:
    """The table rows the figures present have, in the probe's order: tests, then the ping-pong's parts."""
    have = {row(p[0], p[1]) for f in present if (p := split(f))}
    order = [row(t, part) for t in ALL_TESTS
             for part in (None, *(PINGPONG_PARTS if t == "sem_pingpong" else ()))]
    return [r for r in order if r in have]


class RtosKind(Kind):
    name = "rtos"

    def is_figure(self, figure_name: str) -> bool:
        return split(figure_name) is not None

    def figures(self, m: Measurement) -> dict[str, float]:
        out: dict[str, float] = {}
        for r in _tests(m):
            out.update(result_figures(r))
        return out

    def decode(self, m: Measurement) -> Result:
        out = Result(self.figures(m), self.sample_count(m))
        for r in _tests(m):
            h = result_histogram(r)
            if h is not None and h.total:
                out.distributions[r["test"]] = h
        return out

    def sample_count(self, m: Measurement) -> int | None:
        # Each test's figures rest on its own count: the smallest is what every figure has at least.
        counts = [record_count(r) for r in _tests(m)]
        return min(counts) if counts else None

    def row_figures(self, present: list[str]) -> list[str]:
        return [figure(r, s) for r in rows(present) for s in TABLE_STATS]

    def compared_figures(self, present: list[str]) -> list[str]:
        # The ping-pong's parts are its round trip again, in halves: compared once, as the round trip.
        return [figure(r, s) for r in rows(present) if "." not in r for s in ("avg", "p99", "max")]

    def stable_figures(self, present: list[str]) -> list[str]:
        # The body of each distribution should not move between repetitions; its tail legitimately does.
        return [figure(r, "p50") for r in rows(present) if "." not in r]

    def samples_needed(self, figure_name: str) -> int:
        p = split(figure_name)
        if p and p[2] in PERCENTILES:
            return round(1 / (1 - PERCENTILES[p[2]] / 100))
        return 1

    def is_extreme(self, figure_name: str) -> bool:
        p = split(figure_name)
        return bool(p) and p[2] in ("max", "min")

    def label(self, figure_name: str) -> str:
        p = split(figure_name)
        if not p:
            return figure_name
        test, part, stat, _ = p
        return f"{row_words(row(test, part))} {stat_words(stat)}"

    def considerations(self, data, bench: str, comps: list,
                       analysed: Any = None) -> list[tuple[str, str, str]]:
        present = data.figure_names(bench)
        summary = tuple(figure(r, "avg") for r in rows(present) if "." not in r)[:4]
        return cell_medians(self, data, bench, summary) + differences(self, comps)

    def describe(self, benchmark: dict[str, Any], params: dict[str, Any] | None) -> str:
        p = params or {}
        policy = p.get("policy") or benchmark.get("policy") or "fifo"
        priority = p.get("priority", benchmark.get("priority"))
        count = p.get("count") or benchmark.get("count") or 1000
        port = bool(p.get("port", benchmark.get("port")))
        own = list(PORT_RUN_TESTS) if port else list(RTOS_TESTS)
        tests = p.get("tests") or benchmark.get("tests") or own
        tests = own if tests == "all" else tests
        cpus = p.get("cpus") or benchmark.get("cpus")
        period = p.get("timer_period_ns")
        how = (f"under SCHED_{str(policy).upper()}, the activated thread at priority {priority} and the activating "
               f"one at {priority - 1}" if policy != "other" and isinstance(priority, int)
               else "under SCHED_OTHER, both threads at the same nice level")
        where = f" on CPU {cpus[0] if isinstance(cpus, list) and cpus else cpus}" if cpus else ""
        timer = f" (period {exact_duration(period)})" if period else ""
        system = ("written against the probe's porting layer (docs/porting.md), on its POSIX port under Linux "
                  "or a bare-metal image's own scheduler" if port else "on Linux with POSIX threads")
        return (f"Per-operation cost of the primitives a real-time OS offers, {system}: "
                f"{', '.join(tests)}. Each test times {counted(count, 'operation')} one by one with the monotonic "
                "clock and "
                "reports min, avg, p99 and max; the clock read itself is in every sample (the probe reports its "
                f"cost). Both threads of a test share one CPU{where}, {how}, so that the activation of the "
                f"higher-priority thread is a preemption; the {'irq_task' if port else 'timer'} test" + timer +
                " measures how late a thread runs after an absolute deadline. Percentiles come from the probe's "
                "log-linear histogram (within 1 % of exact); min, avg and max are exact.")


register(RtosKind())
