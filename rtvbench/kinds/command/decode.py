"""The `command` kind: the figures an external tool's output was parsed into (docs/command.md).

Unlike the probe's kinds, what the figures are depends on the format and, for `mapping`, on the
campaign: the measurement's `result` record carries each figure's value, unit and direction, as
the parser (rtvbench/kinds/command/formats.py) found them when the command ran or the file was
imported. Units and directions are learnt from the records decoded, so that everything after
decoding (comparisons, requirements, history) reads them by figure name like any kind's; a figure
not seen yet falls back on its name's suffix.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from rtvbench.analysis.histogram import Histogram
from rtvbench.analysis.kind import Kind, Result, register, split_cpu
from rtvbench.kinds.command.formats import (MAX_BUCKETS, MAX_LATENCY_US, MAX_SAMPLES,
                                            histogram_problem)
from rtvbench.results import Measurement
from rtvbench.units import PERCENTILES, format_value

_FIGURE = re.compile(r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$")
_THREAD = re.compile(r"^thread\d+$")
#: rtla timerlat's histograms: a timer context, per CPU or merged
_CONTEXT = re.compile(r"(cpu\d+\.)?(irq|thread|user)")
# Suffixes of names whose larger value is the better one, for figures not decoded yet.
_HIGHER = ("_per_s", "_per_cpu_s", "_bps", "_bytes", "bogo_ops", "availability_percent", "packets")
_UNIT_SUFFIX = (("_us", "us"), ("_ms", "ms"), ("_ns", "ns"), ("_bps", "bps"), ("bytes_per_s", "B/s"),
                ("_per_s", "/s"), ("_percent", "%"), ("_bytes", "B"), ("_s", "s"))
# Figures shown per repetition when present, in this order (the tables would be unreadable with all).
_ROW_LIMIT = 8

#: the percentiles read from a tool's latency histogram
_PERCENTILE_STEMS = ("p50", "p90", "p99", "p999")

#: how an imported benchmark's `command` key starts (CommandBenchmark.import_keys)
IMPORTED = "(imported) "

_units: dict[str, str] = {}
_lower: dict[str, bool] = {}


def _histogram(buckets: Any) -> Histogram | None:
    """Stored [lo_ns, hi_ns, count] buckets as a Histogram, None when they are not such a list or
    lie beyond the parsers' bounds (a store written before they were, or by hand)."""
    if not isinstance(buckets, list) or len(buckets) > MAX_BUCKETS:
        return None
    try:
        rows = np.array([[int(a), int(b), int(c)] for a, b, c in buckets], dtype=np.int64).reshape(-1, 3)
    except (TypeError, ValueError, OverflowError):
        return None
    rows = rows[np.argsort(rows[:, 0], kind="stable")]
    if (rows.size == 0 or (rows[:, 1] <= rows[:, 0]).any() or (rows[:, 2] < 0).any() or (rows[:, 0] < 0).any()
            or (rows[:, 1] > MAX_LATENCY_US * 1000).any()):
        return None
    return Histogram(lo=rows[:, 0], hi=rows[:, 1], count=rows[:, 2])


def _percentiles(out: Result, prefix: str, h: Histogram) -> None:
    """The percentiles of a tool's latency histogram as `<prefix>p99_us` ...: the middle of the bin
    of the nearest rank among every sample the figures count (`<prefix>count`, with the overflows
    above the histogram), clamped to the figures' min and max. A percentile whose rank lies among
    the overflows has no value."""
    count = out.figures.get(f"{prefix}count")
    n = int(count) if count is not None and count >= h.total else h.total
    running = np.cumsum(h.count)
    low, high = out.figures.get(f"{prefix}min_us"), out.figures.get(f"{prefix}max_us")
    for stem in _PERCENTILE_STEMS:
        rank = max(1, -(-round(PERCENTILES[stem] * 10000) * n // 1_000_000))
        if rank > h.total:
            continue
        i = int(np.searchsorted(running, rank))
        us = (int(h.lo[i]) + int(h.hi[i])) / 2000
        if high is not None:
            us = min(us, high)
        if low is not None:
            us = max(us, low)
        out.figures[f"{prefix}{stem}_us"] = us


def _runs(out: Result, stored: Any) -> None:
    """The values of the runs a figure summarises (Parsed.samples), when they are such a list."""
    if not isinstance(stored, dict):
        return
    for name, values in stored.items():
        if (name in out.figures and isinstance(values, list) and 0 < len(values) <= MAX_SAMPLES
                and all(not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v) for v in values)):
            out.runs[name] = [float(v) for v in values]


class CommandKind(Kind):
    name = "command"
    per_cpu = True              # cyclictest and rtla figures come per CPU too (`cpu1.max_us`)

    def decode(self, m: Measurement) -> Result:
        out = Result()
        for r in m.results:
            figures = r.get("figures")
            if not isinstance(figures, dict):
                continue
            units, lower = r.get("units") or {}, r.get("lower_is_better") or {}
            for name, value in figures.items():
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not _FIGURE.match(name):
                    continue
                out.figures[name] = float(value)
                if isinstance(units.get(name), str):
                    _units[split_cpu(name)[1]] = units[name]
                if isinstance(lower.get(name), bool):
                    _lower[split_cpu(name)[1]] = lower[name]
            _runs(out, r.get("samples"))
            histograms = r.get("histograms")
            if not isinstance(histograms, dict) or histogram_problem(histograms):
                continue
            for key, buckets in histograms.items():
                h = _histogram(buckets)
                if h is None or not h.total:
                    continue
                context = _CONTEXT.fullmatch(key)
                # A timer context's figures are `thread_max_us`, `cpu1.thread_count` (rtla's formats).
                _percentiles(out, "" if key == "all" else f"{key}_" if context else f"{key}.", h)
                cpu = re.fullmatch(r"cpu(\d+)", key)
                if cpu:
                    out.cpu_distributions[int(cpu.group(1))] = h
                elif key == "all":
                    out.distributions["latency"] = h
                elif _THREAD.match(key):
                    out.distributions[key.replace("thread", "thread ")] = h
                elif context and not context.group(1):
                    out.distributions[f"{key} latency"] = h
                elif context and context.group(2) == "thread":
                    # The thread's wake-up latency is the CPU's, as cyclictest's thread per CPU is.
                    out.cpu_distributions[int(context.group(1)[3:-1])] = h
        count = out.figures.get("count")
        out.samples = int(count) if count is not None and float(count).is_integer() else None
        for name, value in out.figures.items():
            cpu, base = split_cpu(name)
            if cpu is not None and base == "count":
                out.cpu_samples[cpu] = int(value)
        return out

    def figures(self, m: Measurement) -> dict[str, float]:
        return self.decode(m).figures

    def is_figure(self, figure: str) -> bool:
        # Which figures a command benchmark has depends on its format and campaign: the benchmark
        # checks a requirement's figure (figure_problem); any well-formed name may be one.
        return bool(_FIGURE.match(figure))

    def sample_count(self, m: Measurement) -> int | None:
        return self.decode(m).samples

    def unit(self, figure: str) -> str:
        base = split_cpu(figure)[1]
        if base in _units:
            return _units[base]
        return next((unit for suffix, unit in _UNIT_SUFFIX if base.endswith(suffix)), "count")

    def format(self, value: float | None, figure: str) -> str:
        unit = self.unit(figure)
        if unit == "ms" and value is not None:
            # format_value shows every time in us; a command's milliseconds read better as such.
            return f"{value:.3g} ms"
        return format_value(value, unit)

    def lower_is_better(self, figure: str) -> bool:
        base = split_cpu(figure)[1]
        if base in _lower:
            return _lower[base]
        return not base.endswith(_HIGHER)

    def is_extreme(self, figure: str) -> bool:
        base = split_cpu(figure)[1].rsplit(".", 1)[-1]
        return base.startswith(("max_", "min_", "irq_max", "thread_max", "user_max", "max_noise", "max_single"))

    def _merged(self, present: list[str]) -> list[str]:
        return [f for f in present if split_cpu(f)[0] is None and not f.split(".")[0].startswith("thread")]

    def row_figures(self, present: list[str]) -> list[str]:
        return self._merged(present)[:_ROW_LIMIT]

    def compared_figures(self, present: list[str]) -> list[str]:
        return self._merged(present)

    def stable_figures(self, present: list[str]) -> list[str]:
        return [f for f in self._merged(present) if not self.is_extreme(f) and self.unit(f) != "count"]

    def describe(self, benchmark: dict[str, Any], params: dict[str, Any] | None) -> str:
        p = params or benchmark
        command, fmt = p.get("command", "?"), p.get("format", "?")
        if isinstance(command, str) and command.startswith(IMPORTED):
            return (f"Results made elsewhere by an external tool (`rtvbench import`, the files named with the "
                    f"environment), read as `{fmt}` (docs/command.md); what the tool recorded of how it ran: "
                    f"`{command[len(IMPORTED):]}`. The tool's own numbers, with their merging across CPUs or "
                    "threads where the format has them.")
        return (f"An external tool: `{command}`, run in the measured environment instead of the probe, its "
                f"output read as `{fmt}` (docs/command.md). The figures are the tool's own numbers; "
                "rtvbench adds only their merging across CPUs or threads where the format has them.")


register(CommandKind())
