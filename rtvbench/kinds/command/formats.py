"""The parsers of the `command` kind: an external tool's output as named figures.

A leaf module (it imports nothing of rtvbench): the campaign stage checks format names and
figure names with it, the runner parses a measured command's output with it, `rtvbench import`
parses a file made elsewhere with it, and the stored figures are what analysis reads. Each
parser reads the form the tool itself writes, documented in docs/command.md.

A parser returns `Parsed`: figures (name -> value), each with its unit and whether lower is
better, and histograms (name -> [[lo_ns, hi_ns, count], ...]). A parser that cannot find what
its format promises raises FormatError with one sentence naming the format and what was missing.

The output comes from a tool rtvbench does not control, or from a file anyone may hand to
`rtvbench import`: this module is where it is checked. A figure the tool could not have meant
(not finite, a negative count or latency, a minimum above its maximum, a share above 100 %), more
threads, CPUs or buckets than the limits below, JSON nested deeper than MAX_JSON_DEPTH: each is a
FormatError saying which figure, its value and the rule, and `parse` lets no other exception out.
"""

from __future__ import annotations

import io
import json
import math
import re
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable

import re2
import yaml

from rtvbench.kinds.command import json_paths

#: units a figure may have; `us`, `ms` and `ns` are times, the rest as written in reports
UNITS = ("ns", "us", "ms", "s", "count", "bps", "B/s", "/s", "%", "B")

#: the most text one output may have (a command's stdout, a file it wrote, a file imported): far
#: more than any of these tools writes for one run, and its JSON parsed still fits in memory
MAX_OUTPUT_BYTES = 16 << 20
#: JSON nested deeper than this is refused (the tools write 4 levels at most), and JSON of more
#: objects and arrays than this before it is parsed (an hour of iperf3 -J at 1 s intervals and 128
#: streams has some 500 000): parsed, each costs some 100 bytes
MAX_JSON_DEPTH = 64
MAX_JSON_CONTAINERS = 1_000_000
#: threads, CPUs, commands, stressors or algorithms in one output: each becomes figures, tables
#: and plots in a report, which must stay quick to make
MAX_SERIES = 512
#: figures of one output
MAX_FIGURES = 20_000
#: buckets of one histogram (cyclictest's 1 us bins up to 100 ms), and of all of one output's
MAX_BUCKETS = 100_000
MAX_HISTOGRAM_CELLS = 1_000_000
#: the largest latency a figure or a histogram bucket may have: one hour, in us
MAX_LATENCY_US = 3_600_000_000
#: the largest count: beyond it a float no longer holds every integer
MAX_COUNT = 2 ** 53
#: the longest name part a tool may give a figure (a command line, a stressor, an algorithm)
MAX_NAME = 200
#: CPU numbers a figure name may carry
MAX_CPU = 65_535
#: the longest line of a text format (a cyclictest histogram row of 512 threads has some 10 000
#: characters): the regexes that read a row keep a state per number in it
MAX_LINE = 64 << 10
#: the runs of one output kept as samples (hyperfine's times of every command): each is a number
#: in the stored record and in the statistics over repetitions (hyperfine runs 10 by default)
MAX_SAMPLES = 100_000
#: the intervals of one output kept as a time series (iperf3's: an hour at 1 s is 3 600)
MAX_INTERVALS = 100_000
#: the most YAML text read: stress-ng writes some 400 bytes per stressor, and a YAML reader needs
#: far more time and memory per byte than a JSON one
MAX_YAML_BYTES = 4 << 20


class FormatError(ValueError):
    """Output a parser cannot read; the message is one sentence."""


@dataclass
class Parsed:
    figures: dict[str, float] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    lower_is_better: dict[str, bool] = field(default_factory=dict)
    #: "all", "cpu<N>" or "thread<N>" -> buckets [lo_ns, hi_ns, count]
    histograms: dict[str, list[list[int]]] = field(default_factory=dict)
    #: figure -> the value of each run the tool made itself, independent runs the figure summarises
    #: (hyperfine's time of each run of a command)
    samples: dict[str, list[float]] = field(default_factory=dict)
    #: name -> [[end of the interval in s, value], ...] (iperf3's intervals)
    series: dict[str, list[list[float]]] = field(default_factory=dict)
    #: what the tool recorded of how it was run (its command line, its options), which says whether
    #: two outputs measured the same thing; None when the output does not say
    parameters: dict[str, Any] | None = None
    #: the tools' own formats hold no negative figure and no share above 100 %; a mapping's
    #: figures are the campaign's (an offset may be negative, a CPU share above 100 %)
    strict: bool = True

    def add(self, name: str, value: float | None, unit: str, lower: bool) -> None:
        if value is None:
            return
        value = float(value)
        if not math.isfinite(value):
            raise FormatError(f"figure {name} is {value}, not a finite number.")
        if self.strict and value < 0:
            raise FormatError(f"figure {name} is {value:g}, below 0, which it cannot be.")
        if self.strict and unit == "%" and value > 100:
            raise FormatError(f"figure {name} is {value:g} %, above 100 %, which it cannot be.")
        if self.strict and unit == "count" and value > MAX_COUNT:
            raise FormatError(f"figure {name} is {value:g}, more than the {MAX_COUNT} a count may be.")
        if name not in self.figures and len(self.figures) >= MAX_FIGURES:
            raise FormatError(f"the output has more than {MAX_FIGURES} figures, the most one measurement may have.")
        self.figures[name] = value
        self.units[name] = unit
        self.lower_is_better[name] = lower

    def record(self, fmt: str) -> dict[str, Any]:
        """The stored `result` record of a measurement."""
        record = {"type": "result", "format": fmt, "figures": self.figures, "units": self.units,
                  "lower_is_better": self.lower_is_better, "histograms": self.histograms}
        for key in ("samples", "series", "parameters"):
            if getattr(self, key):
                record[key] = getattr(self, key)
        return record


def figure_token(text: str) -> str:
    """A tool's name for something (a command line, an algorithm) as one part of a figure name:
    letters, digits, '_' and '-' only, so that '.' keeps separating the parts."""
    token = re.sub(r"[^A-Za-z0-9_-]+", "_", text).strip("_")
    return token or "unnamed"


def _name_part(text: str, fmt: str, what: str) -> str:
    token = figure_token(text)
    if len(token) > MAX_NAME:
        raise FormatError(f"{fmt}: a {what} of {len(token)} characters is longer than the {MAX_NAME} "
                          "a figure's name part may have.")
    return token


def _series(fmt: str, n: int, what: str) -> None:
    if n > MAX_SERIES:
        raise FormatError(f"{fmt}: the output has {n} {what}, more than the {MAX_SERIES} one measurement may have.")


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def _int(text: str, fmt: str, what: str) -> int:
    """An integer the tool printed (digits, maybe a '-'), with no more digits than a count has."""
    if len(text.lstrip("-")) > 18:
        raise FormatError(f"{fmt}: {what} is an integer of {len(text.lstrip('-'))} digits, more than a count has.")
    return int(text)


def _float(text: str, fmt: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise FormatError(f"{fmt}: {what} {text[:40]!r} is not a number.") from None
    if not math.isfinite(value):
        raise FormatError(f"{fmt}: {what} is {text[:40]!r}, not a finite number.")
    return value


def _count(v: Any, fmt: str, what: str) -> int:
    """A count in the tool's JSON: an integer (or a float of one) from 0 to MAX_COUNT."""
    n = _number(v)
    if n is None or not n.is_integer() or not 0 <= n <= MAX_COUNT:
        raise FormatError(f"{fmt}: {what} is {str(v)[:40]}, not a count (an integer from 0 to {MAX_COUNT}).")
    return int(n)


def _depth(data: Any) -> int:
    """How many levels of objects and arrays the parsed JSON has, counted without recursion."""
    deepest, todo = 0, [(data, 1)]
    while todo:
        value, level = todo.pop()
        if isinstance(value, (dict, list)):
            deepest = max(deepest, level)
            todo.extend((v, level + 1) for v in (value.values() if isinstance(value, dict) else value))
    return deepest


def _json(text: str, fmt: str, what: str) -> Any:
    def constant(name: str) -> None:
        raise FormatError(f"{fmt}: the JSON has {name}, which is not a number JSON allows.")

    def finite(literal: str) -> float:
        value = float(literal)
        if not math.isfinite(value):
            raise FormatError(f"{fmt}: the JSON has the number {literal[:40]}, beyond what a float holds.")
        return value

    def integer(literal: str) -> int | float:
        if len(literal.lstrip("-")) > 20:
            return finite(literal)          # as JSON readers do beyond 64 bits: a float, or refused
        return int(literal)

    # Counted in the text, before parsing: brackets inside strings too, which the tools' outputs
    # hardly have.
    containers = text.count("[") + text.count("{")
    if containers > MAX_JSON_CONTAINERS:
        raise FormatError(f"{fmt}: the JSON has {containers:,} objects and arrays, more than the "
                          f"{MAX_JSON_CONTAINERS:,} one output may have; expected {what}.")
    deep = f"{fmt}: the JSON is nested more than {MAX_JSON_DEPTH} levels deep; expected {what}."
    try:
        data = json.loads(text, parse_constant=constant, parse_float=finite, parse_int=integer)
    except json.JSONDecodeError as e:
        raise FormatError(f"{fmt}: the output is not JSON ({e.msg} at line {e.lineno}); "
                          f"expected {what}.") from None
    except RecursionError:
        # The parser recurses once a level and stops cleanly at Python's recursion limit (1000).
        raise FormatError(deep) from None
    if _depth(data) > MAX_JSON_DEPTH:
        raise FormatError(deep)
    return data


# -- latency summaries (cyclictest, rtla timerlat) ---------------------------------------------

@dataclass
class _Stats:
    """min/avg/max of samples in microseconds, and how many there were, merged across threads."""

    count: int = 0
    min: float = math.inf
    max: float = -math.inf
    total: float = 0.0          # sum of avg * count, for the merged average

    def add(self, count: int, lo: float, avg: float, hi: float) -> None:
        self.count += count
        self.min, self.max = min(self.min, lo), max(self.max, hi)
        self.total += avg * count

    def put(self, out: Parsed, prefix: str, stem: str = "", unit: str = "us") -> None:
        if self.count <= 0:
            return
        out.add(f"{prefix}{stem}min_{unit}", self.min, unit, True)
        out.add(f"{prefix}{stem}avg_{unit}", self.total / self.count, unit, True)
        out.add(f"{prefix}{stem}max_{unit}", self.max, unit, True)


def _latencies(fmt: str, who: str, lo: float, avg: float, hi: float, unit: str = "us") -> None:
    """The rules a tool's min/avg/max of one thread or CPU keep. The average may lie up to one unit
    outside min..max: the tools print it cut to whole units."""
    limit = MAX_LATENCY_US * (1000 if unit == "ns" else 1)
    for name, v in (("min", lo), ("avg", avg), ("max", hi)):
        if not math.isfinite(v) or not 0 <= v <= limit:
            raise FormatError(f"{fmt}: {who} has {name} {v:g} {unit}, outside 0..{limit} {unit} (one hour, the "
                              "largest latency read).")
    if lo > hi:
        raise FormatError(f"{fmt}: {who} has min {lo:g} {unit} above its max {hi:g} {unit}.")
    if not lo - 1 <= avg <= hi + 1:
        raise FormatError(f"{fmt}: {who} has avg {avg:g} {unit} outside its min {lo:g} .. max {hi:g} {unit}.")


def _lines(text: str, fmt: str):
    """The lines of a text format, one at a time (a list of them would hold millions of short
    strings at once), each at most MAX_LINE long."""
    for line in io.StringIO(text, newline=None):
        if len(line) > MAX_LINE:
            raise FormatError(f"{fmt}: a line has {len(line):,} characters, more than the {MAX_LINE:,} a line of "
                              "this format may have.")
        yield line.rstrip("\n")


def _us_buckets(counts: dict[int, int]) -> list[list[int]]:
    """cyclictest's 1 us histogram bins as [lo_ns, hi_ns, count]."""
    return [[us * 1000, (us + 1) * 1000, n] for us, n in sorted(counts.items()) if n > 0]


def _bin(us: int, fmt: str, who: str) -> int:
    if us >= MAX_LATENCY_US:
        raise FormatError(f"{fmt}: {who} has a histogram bin at {us} us, beyond the {MAX_LATENCY_US} us "
                          "(one hour) a latency may have.")
    return us


def _thread_number(key: str) -> int | None:
    return int(key) if key.isascii() and key.isdigit() and len(key) <= 9 else None


def _thread_order(key: str) -> tuple[int, str]:
    return (_thread_number(key) or 0, key)


def _without_json_file(command: str) -> str:
    """cyclictest's command line without the file it wrote its JSON to (`--json=FILE`), which names
    the output, not what was measured."""
    words, out = command.split()[:_MAX_WORDS], []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word == "--json":
            skip = True
        elif not word.startswith("--json="):
            out.append(word)
    return " ".join(out)[:MAX_LINE]


#: the words of a command line kept as a parameter
_MAX_WORDS = 1024


def cyclictest_json(text: str) -> Parsed:
    """The file `cyclictest --json=FILE` writes: per thread `cycles`, `min`, `avg`, `max` (us),
    `cpu`, and with -h/-H a `histogram` of 1 us bins. Threads on one CPU are merged into that
    CPU's figures (`cpu<N>.max_us`); the merged figures are over every thread. Its `cmdline`
    without the JSON file's name is the output's parameters."""
    fmt = "cyclictest-json"
    data = _json(text, fmt, "the file cyclictest --json=FILE writes")
    threads = data.get("thread") if isinstance(data, dict) else None
    if not isinstance(threads, dict) or not threads:
        raise FormatError(f"{fmt}: the JSON has no `thread` object with a thread in it "
                          "(is it the file cyclictest --json=FILE wrote?).")
    _series(fmt, len(threads), "threads")
    out = Parsed()
    merged, per_cpu = _Stats(), {}
    hist_all: dict[int, int] = {}
    hist_cpu: dict[int, dict[int, int]] = {}
    for key, t in sorted(threads.items(), key=lambda kv: _thread_order(kv[0])):
        who = f"thread {key[:40]}"
        values = [_number(t.get(k)) if isinstance(t, dict) else None for k in ("cycles", "min", "avg", "max")]
        if any(v is None for v in values):
            raise FormatError(f"{fmt}: {who} lacks one of `cycles`, `min`, `avg`, `max`.")
        cycles, (lo, avg, hi) = _count(t["cycles"], fmt, f"`cycles` of {who}"), values[1:]
        cpu = t.get("cpu")
        if not isinstance(cpu, int) or isinstance(cpu, bool) or cpu < 0:
            cpu = _thread_number(key)
            if cpu is None:
                raise FormatError(f"{fmt}: {who} has no `cpu` and its key is not a thread number.")
        if cpu > MAX_CPU:
            raise FormatError(f"{fmt}: {who} ran on CPU {cpu}, beyond the CPU numbers read (0..{MAX_CPU}).")
        if cycles:
            # A thread without a cycle has cyclictest's starting values, not a measured min and max.
            _latencies(fmt, who, lo, avg, hi)
            merged.add(cycles, lo, avg, hi)
            per_cpu.setdefault(cpu, _Stats()).add(cycles, lo, avg, hi)
        hist = t.get("histogram")
        if isinstance(hist, dict):
            if len(hist) > MAX_BUCKETS:
                raise FormatError(f"{fmt}: the histogram of {who} has {len(hist)} bins, more than the "
                                  f"{MAX_BUCKETS} one may have.")
            cpu_hist = hist_cpu.setdefault(cpu, {})
            for us, n in hist.items():
                if us.isascii() and us.isdigit():
                    us = _bin(_int(us, fmt, f"a histogram bin of {who}"), fmt, who)
                    n = _count(n, fmt, f"bin {us} of {who}")
                    hist_all[us] = hist_all.get(us, 0) + n
                    cpu_hist[us] = cpu_hist.get(us, 0) + n
    merged.put(out, "")
    out.add("count", merged.count, "count", False)
    for cpu, stats in sorted(per_cpu.items()):
        stats.put(out, f"cpu{cpu}.")
        out.add(f"cpu{cpu}.count", stats.count, "count", False)
    if hist_all:
        out.histograms["all"] = _us_buckets(hist_all)
        out.histograms.update({f"cpu{cpu}": _us_buckets(h) for cpu, h in hist_cpu.items() if h})
    command = data.get("cmdline:", data.get("cmdline"))
    if isinstance(command, str):
        out.parameters = {"command": _without_json_file(command)}
    return out


_HIST_ROW = re.compile(r"^(\d+)((?:\s+\d+)+)\s*$")
_HIST_SUMMARY = re.compile(r"^#\s*(Total|Min Latencies|Avg Latencies|Max Latencies|Histogram Overflows):"
                           r"((?:\s+-?\d+)+)\s*$")


def cyclictest_hist(text: str) -> Parsed:
    """What cyclictest prints with -h N / -H N (stdout): one row per 1 us bin with a column per
    thread (and one over all threads with -H), then `# Total:`, `# Min/Avg/Max Latencies:` and `# Histogram Overflows:` lines.
    The text names threads, not CPUs: figures are `thread<N>.max_us` ... and the merged
    `max_us` ...; `count` is the samples in the bins plus the overflows. cyclictest cuts the
    average it prints to whole microseconds (the merged average is of those)."""
    fmt = "cyclictest-hist"
    summary: dict[str, list[int]] = {}
    bins: dict[int, list[int]] = {}

    def numbers(cells: str, what: str) -> list[int]:
        values = cells.split()
        if len(values) > MAX_SERIES + 1:                # -H adds a column over all threads
            _series(fmt, len(values), "threads")
        return [_int(x, fmt, what) for x in values]

    for line in _lines(text, fmt):
        line = line.strip()
        m = _HIST_SUMMARY.match(line)
        if m:
            summary[m.group(1)] = numbers(m.group(2), f"a number of `# {m.group(1)}:`")
            continue
        m = _HIST_ROW.match(line)
        if m:
            us = _bin(_int(m.group(1), fmt, "a bin's latency"), fmt, "a row")
            bins[us] = numbers(m.group(2), f"a count of bin {us}")
            if len(bins) > MAX_BUCKETS:
                raise FormatError(f"{fmt}: the histogram has more than {MAX_BUCKETS} bins, the most one may have.")
    missing = [k for k in ("Total", "Min Latencies", "Avg Latencies", "Max Latencies") if k not in summary]
    if missing:
        raise FormatError(f"{fmt}: no `# {missing[0]}:` line (is it cyclictest's output with -h or -H?).")
    # With -H, the bins, Total, Max and Overflows have one more column, over all threads: left out
    # here, the merged figures are computed from the threads' own.
    n = len(summary["Min Latencies"])
    _series(fmt, n, "threads")
    if any(len(v) not in (n, n + 1) for v in [*summary.values(), *bins.values()]):
        raise FormatError(f"{fmt}: the histogram and summary lines disagree on the number of threads.")
    summary = {k: v[:n] for k, v in summary.items()}
    for name, values in summary.items():
        if min(values) < 0:
            raise FormatError(f"{fmt}: `# {name}:` has {min(values)}, below 0, which it cannot be.")
    bins = {us: row[:n] for us, row in bins.items()}
    overflows = summary.get("Histogram Overflows", [0] * n)
    out = Parsed()
    merged = _Stats()
    hist_all: dict[int, int] = {}
    for i in range(n):
        count = summary["Total"][i] + overflows[i]
        if count <= 0:
            continue
        lo, avg, hi = summary["Min Latencies"][i], summary["Avg Latencies"][i], summary["Max Latencies"][i]
        _latencies(fmt, f"thread {i}", lo, avg, hi)
        merged.add(count, lo, avg, hi)
        stats = _Stats()
        stats.add(count, lo, avg, hi)
        stats.put(out, f"thread{i}.")
        out.add(f"thread{i}.count", count, "count", False)
        out.add(f"thread{i}.overflows", overflows[i], "count", True)
        counts = {us: row[i] for us, row in bins.items() if row[i]}
        if counts:
            out.histograms[f"thread{i}"] = _us_buckets(counts)
            for us, c in counts.items():
                hist_all[us] = hist_all.get(us, 0) + c
    if merged.count == 0:
        raise FormatError(f"{fmt}: the `# Total:` line counts no sample.")
    merged.put(out, "")
    out.add("count", merged.count, "count", False)
    out.add("overflows", sum(overflows), "count", True)
    if hist_all:
        out.histograms["all"] = _us_buckets(hist_all)
    return out


_NUMS = r"((?:\s+-?\d+(?:\.\d+)?)+)\s*"


def rtla_timerlat(text: str) -> Parsed:
    """The summary `rtla timerlat top` prints (with -q: once, at the end): per CPU a row
    `CPU #COUNT | IRQ cur min avg max | Thread cur min avg max [| User cur min avg max]`, in us
    (ns with --nano). Figures `cpu<N>.irq_max_us`, `cpu<N>.thread_avg_us` ... and merged
    `irq_max_us` ... over the CPUs (averages weighted by count); `cur` is left out (the last
    sample, not a statistic)."""
    fmt = "rtla-timerlat"
    unit = "ns" if re.search(r"Latency \(ns\)", text) else "us"
    stems = ["irq_", "thread_", "user_"]
    out = Parsed()
    merged = [_Stats() for _ in stems]
    total, rows = 0, 0
    for line in _lines(text, fmt):
        # A row may end with a remark ("<--- CPU with spike" in rtla's documentation).
        cells = line.split("<")[0].split("|")
        head = re.match(r"^\s*(\d+)\s+#(\d+)\s*$", cells[0])
        if not head or not 3 <= len(cells) <= 4:
            continue
        groups = [c.split() for c in cells[1:]]
        if any(len(g) != 4 for g in groups):
            continue
        try:
            values = [[float(x) for x in g] for g in groups]
        except ValueError:
            continue
        cpu, count = _int(head.group(1), fmt, "a CPU number"), _int(head.group(2), fmt, "a count")
        if cpu > MAX_CPU:
            raise FormatError(f"{fmt}: a row of CPU {cpu}, beyond the CPU numbers read (0..{MAX_CPU}).")
        rows += 1
        _series(fmt, rows, "CPU rows")
        total += count
        out.add(f"cpu{cpu}.count", count, "count", False)
        if not count:
            continue                    # no activation: rtla's starting values, not latencies
        for i, (_, lo, avg, hi) in enumerate(values):
            _latencies(fmt, f"CPU {cpu} ({stems[i][:-1]})", lo, avg, hi, unit)
            s = _Stats()
            s.add(count, lo, avg, hi)
            s.put(out, f"cpu{cpu}.", stems[i], unit)
            merged[i].add(count, lo, avg, hi)
    if rows == 0:
        raise FormatError(f"{fmt}: no per-CPU row `CPU #COUNT | cur min avg max | cur min avg max` "
                          "(is it the output of rtla timerlat top?).")
    for i, s in enumerate(merged):
        s.put(out, "", stems[i], unit)
    out.add("count", total, "count", False)
    return out


_TIMERLAT_COLUMN = re.compile(r"^(IRQ|Thr|Usr)-(\d+)$")
_TIMERLAT_CONTEXTS = {"IRQ": "irq", "Thr": "thread", "Usr": "user"}
_TIMERLAT_SUMMARY = ("over", "count", "min", "avg", "max")


def rtla_timerlat_hist(text: str) -> Parsed:
    """What `rtla timerlat hist` prints: a header `Index IRQ-000 Thr-000 [Usr-000] IRQ-001 ...`, one
    row per bin (its start, then a count per column), then the rows `over:`, `count:`, `min:`,
    `avg:` and `max:`, in us (ns with --nano, read here into us). The bins are as wide as the
    largest step that divides every start printed (`-b N` prints multiples of N; rtla leaves out
    empty rows). Figures `cpu<N>.irq_max_us`, `cpu<N>.thread_count` ... as `rtla-timerlat`'s, and
    merged `irq_max_us` ... over the CPUs; `count` is the samples in the bins plus `over`.
    Histograms per CPU and context (`cpu<N>.thread`) and merged per context (`thread`). Newer rtla
    ends with an `ALL:` section over the CPUs, which is computed here from the columns instead."""
    fmt = "rtla-timerlat-hist"
    scale = 1 if re.search(r"^#.*\bnanoseconds\b", text, re.M) else 1000     # ns per unit printed
    columns: list[tuple[int, str]] | None = None
    bins: dict[int, list[int]] = {}
    summary: dict[str, list[str]] = {}
    duration = None
    for line in _lines(text, fmt):
        cells = line.split()
        if not cells:
            continue
        if cells[0].startswith("#"):
            m = re.match(r"^#\s*Duration:\s*(.{1,40}?)\s*$", line)
            duration = m.group(1) if m else duration
            continue
        if cells[0] == "ALL:":
            break
        if cells[0] == "Index":
            if columns is not None:
                raise FormatError(f"{fmt}: a second `Index` header (is it one histogram of rtla timerlat hist?).")
            if len(cells) - 1 > 3 * MAX_SERIES:
                _series(fmt, (len(cells) - 1) // 3 + 1, "CPUs")
            columns = []
            for name in cells[1:]:
                m = _TIMERLAT_COLUMN.match(name)
                if not m:
                    raise FormatError(f"{fmt}: the header has a column {name[:40]!r}, not IRQ-<cpu>, Thr-<cpu> or "
                                      "Usr-<cpu>.")
                cpu = _int(m.group(2), fmt, "a CPU number")
                if cpu > MAX_CPU:
                    raise FormatError(f"{fmt}: a column of CPU {cpu}, beyond the CPU numbers read (0..{MAX_CPU}).")
                columns.append((cpu, _TIMERLAT_CONTEXTS[m.group(1)]))
            if len(set(columns)) != len(columns):
                raise FormatError(f"{fmt}: the header names a column twice.")
            _series(fmt, len({c for c, _ in columns}), "CPUs")
            continue
        if columns is None:
            continue                    # what rtla prints before its histogram (its settings)
        if len(cells) != len(columns) + 1:
            raise FormatError(f"{fmt}: a row has {len(cells) - 1} values for {len(columns)} columns.")
        if cells[0].endswith(":"):
            name = cells[0][:-1]
            if name in _TIMERLAT_SUMMARY:
                summary[name] = cells[1:]
            continue
        start = _int(cells[0], fmt, "a bin's start")
        if start * scale >= MAX_LATENCY_US * 1000:
            raise FormatError(f"{fmt}: a bin starts at {start} {'ns' if scale == 1 else 'us'}, beyond the one hour "
                              "a latency may have.")
        bins[start] = [_int(x, fmt, f"a count of bin {start}") for x in cells[1:]]
        if len(bins) > MAX_BUCKETS:
            raise FormatError(f"{fmt}: the histogram has more than {MAX_BUCKETS} bins, the most one may have.")
    if columns is None:
        raise FormatError(f"{fmt}: no `Index IRQ-000 Thr-000 ...` header (is it the output of rtla timerlat hist?).")
    missing = [k for k in _TIMERLAT_SUMMARY if k not in summary]
    if missing:
        raise FormatError(f"{fmt}: no `{missing[0]}:` row (is it the whole output of rtla timerlat hist?).")
    width = 0
    for start in bins:
        width = math.gcd(width, start)
    width = width or 1
    out = Parsed()
    merged: dict[str, _Stats] = {}
    merged_bins: dict[str, dict[int, int]] = {}
    for j, (cpu, ctx) in enumerate(columns):
        who = f"CPU {cpu} ({ctx})"
        over = _int(summary["over"][j], fmt, f"`over:` of {who}")
        count = _int(summary["count"][j], fmt, f"`count:` of {who}")
        counts = {start: row[j] for start, row in bins.items() if row[j]}
        if count != sum(counts.values()) + over:
            raise FormatError(f"{fmt}: {who} counts {count} samples, but its bins and `over:` hold "
                              f"{sum(counts.values()) + over}.")
        prefix = f"cpu{cpu}.{ctx}_"
        out.add(f"{prefix}count", count, "count", False)
        out.add(f"{prefix}overflows", over, "count", True)
        if not count:
            continue                    # no activation: rtla prints its starting values, not latencies
        lo, avg, hi = (_float(summary[k][j], fmt, f"`{k}:` of {who}") for k in ("min", "avg", "max"))
        _latencies(fmt, who, lo, avg, hi, "ns" if scale == 1 else "us")
        lo, avg, hi = lo * scale / 1000, avg * scale / 1000, hi * scale / 1000
        stats = _Stats()
        stats.add(count, lo, avg, hi)
        stats.put(out, f"cpu{cpu}.", f"{ctx}_")
        merged.setdefault(ctx, _Stats()).add(count, lo, avg, hi)
        if counts:
            out.histograms[f"cpu{cpu}.{ctx}"] = [[s * scale, (s + width) * scale, n] for s, n in sorted(counts.items())]
            into = merged_bins.setdefault(ctx, {})
            for start, n in counts.items():
                into[start] = into.get(start, 0) + n
    if not merged:
        raise FormatError(f"{fmt}: the `count:` row counts no sample.")
    for ctx, stats in merged.items():
        stats.put(out, "", f"{ctx}_")
        out.add(f"{ctx}_count", stats.count, "count", False)
        out.add(f"{ctx}_overflows", sum(_int(summary["over"][j], fmt, "`over:`") for j, (_, c) in enumerate(columns)
                                         if c == ctx), "count", True)
        if merged_bins.get(ctx):
            out.histograms[ctx] = [[s * scale, (s + width) * scale, n] for s, n in sorted(merged_bins[ctx].items())]
    out.parameters = {"columns": [f"cpu{cpu}.{ctx}" for cpu, ctx in columns], "duration": duration}
    return out


_OSNOISE_COLUMNS = ("runtime_us", "noise_us", "availability_percent", "max_noise_us", "max_single_us",
                    "hw", "nmi", "irq", "softirq", "thread")


def rtla_osnoise(text: str) -> Parsed:
    """The summary `rtla osnoise top` prints (with -q: once, at the end): per CPU a row
    `CPU #PERIODS RUNTIME NOISE %CPU-AVAILABLE MAX-NOISE MAX-SINGLE HW NMI IRQ SOFTIRQ THREAD`,
    times in us. Figures `cpu<N>.noise_us`, `cpu<N>.availability_percent` ... and merged ones:
    noise and runtime summed, availability recomputed from them, maxima the largest, the
    interference counts summed."""
    fmt = "rtla-osnoise"
    if not re.search(r"Max\s+Single", text):
        raise FormatError(f"{fmt}: no header line with `Max Single` (is it the output of rtla osnoise top?).")
    row = re.compile(r"^\s*(\d+)\s+#(\d+)" + _NUMS + r"$")
    out = Parsed()
    sums = dict.fromkeys(_OSNOISE_COLUMNS, 0.0)
    rows = 0
    for line in _lines(text, fmt):
        m = row.match(line.rstrip())
        if not m or len(m.group(3).split()) != len(_OSNOISE_COLUMNS):
            continue
        rows += 1
        _series(fmt, rows, "CPU rows")
        cpu = _int(m.group(1), fmt, "a CPU number")
        if cpu > MAX_CPU:
            raise FormatError(f"{fmt}: a row of CPU {cpu}, beyond the CPU numbers read (0..{MAX_CPU}).")
        values = dict(zip(_OSNOISE_COLUMNS, (_float(x, fmt, f"a number of CPU {cpu}") for x in m.group(3).split())))
        if values["noise_us"] > values["runtime_us"]:
            raise FormatError(f"{fmt}: CPU {cpu} has noise {values['noise_us']:g} us above its runtime "
                              f"{values['runtime_us']:g} us.")
        for name in ("max_noise_us", "max_single_us"):
            if values[name] > MAX_LATENCY_US:
                raise FormatError(f"{fmt}: CPU {cpu} has {name} {values[name]:g}, beyond the {MAX_LATENCY_US} us "
                                  "(one hour) a latency may have.")
        out.add(f"cpu{cpu}.periods", _int(m.group(2), fmt, "a number of periods"), "count", False)
        for name, v in values.items():
            out.add(f"cpu{cpu}.{name}", v, _osnoise_unit(name), name != "availability_percent")
            if name.startswith("max_"):
                sums[name] = max(sums[name], v)
            elif name != "availability_percent":
                sums[name] += v
    if rows == 0:
        raise FormatError(f"{fmt}: no per-CPU row of {len(_OSNOISE_COLUMNS) + 2} columns "
                          "(CPU, #periods, runtime ... thread).")
    if sums["runtime_us"] > 0:
        sums["availability_percent"] = 100.0 * (1 - sums["noise_us"] / sums["runtime_us"])
    else:
        del sums["availability_percent"]
    for name, v in sums.items():
        out.add(name, v, _osnoise_unit(name), name != "availability_percent")
    return out


def _osnoise_unit(name: str) -> str:
    return "us" if name.endswith("_us") else "%" if name.endswith("_percent") else "count"


# -- throughput tools ---------------------------------------------------------------------------

_STRESS_FIGURES = {
    # stress-ng's key -> (figure, unit, lower is better, scale)
    "bogo-ops": ("bogo_ops", "count", False, 1),
    "bogo-ops-per-second-real-time": ("bogo_ops_per_s", "/s", False, 1),
    "bogo-ops-per-second-usr-sys-time": ("bogo_ops_per_cpu_s", "/s", False, 1),
    "wall-clock-time": ("wall_s", "s", True, 1),
    "user-time": ("user_s", "s", True, 1),
    "system-time": ("system_s", "s", True, 1),
    "max-rss": ("max_rss_bytes", "B", True, 1024),         # stress-ng writes kB
}


def _yaml(text: str, fmt: str, what: str) -> Any:
    """A YAML document read with PyYAML's safe loader (plain data only, no Python objects)."""
    if len(text) > MAX_YAML_BYTES:
        raise FormatError(f"{fmt}: the YAML has {len(text):,} characters, more than the {MAX_YAML_BYTES:,} "
                          f"one output may have; expected {what}.")
    try:
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as e:
        where = getattr(e, "problem_mark", None)
        at = f" at line {where.line + 1}" if where is not None else ""
        problem = getattr(e, "problem", None) or type(e).__name__
        raise FormatError(f"{fmt}: the output is not YAML ({problem}{at}); expected {what}.") from None


def stress_ng_yaml(text: str) -> Parsed:
    """The file `stress-ng --metrics --yaml FILE` writes: its `metrics:` list, one entry per
    stressor, read as YAML. Figures `<stressor>.bogo_ops_per_s` (real time), `<stressor>.bogo_ops_per_cpu_s`
    (per second of user + system time), `<stressor>.bogo_ops`, `<stressor>.wall_s`, `<stressor>.user_s`,
    `<stressor>.system_s` and `<stressor>.max_rss_bytes`; the stressors in their order are its parameters."""
    fmt = "stress-ng-yaml"
    data = _yaml(text, fmt, "the file stress-ng --metrics --yaml FILE writes")
    metrics = data.get("metrics") if isinstance(data, dict) else None
    if not isinstance(metrics, list):
        raise FormatError(f"{fmt}: the YAML has no `metrics:` list (was stress-ng run with --metrics and --yaml FILE?).")
    _series(fmt, len(metrics), "stressors")
    out = Parsed()
    stressors = []
    for entry in metrics:
        if not isinstance(entry, dict) or not isinstance(entry.get("stressor"), str):
            raise FormatError(f"{fmt}: an entry of `metrics:` has no `stressor:` name.")
        stressor = _name_part(entry["stressor"], fmt, "stressor's name")
        stressors.append(stressor)
        for key, (name, unit, lower, scale) in _STRESS_FIGURES.items():
            if key not in entry:
                continue
            value = _number(entry[key])
            if value is None:
                raise FormatError(f"{fmt}: `{key}` of {stressor} is {str(entry[key])[:40]!r}, not a number.")
            out.add(f"{stressor}.{name}", value * scale, unit, lower)
    if not any(name.endswith(".bogo_ops_per_s") for name in out.figures):
        raise FormatError(f"{fmt}: no `metrics:` entry with `bogo-ops-per-second-real-time` "
                          "(was stress-ng run with --metrics and --yaml FILE?).")
    out.parameters = {"stressors": stressors}
    return out


#: the longest time one hyperfine run may take, in seconds (one hour, as a latency)
_MAX_RUN_S = MAX_LATENCY_US / 1e6


def _hyperfine_times(r: dict[str, Any], fmt: str, name: str) -> list[float] | None:
    """A command's `times` in ms, None when the file has none."""
    times = r.get("times")
    if not isinstance(times, list) or not times:
        return None
    out = []
    for i, t in enumerate(times):
        v = _number(t)
        if v is None or not 0 <= v <= _MAX_RUN_S:
            raise FormatError(f"{fmt}: time {i} of command {name} is {str(t)[:40]}, not a number of seconds "
                              "from 0 to one hour.")
        out.append(v * 1e3)
    return out


def hyperfine_json(text: str) -> Parsed:
    """The file `hyperfine --export-json FILE` writes: per command its `times` (seconds, one per
    run), `user`, `system`. Each run's time is a sample of `<command>.time_ms` (whose value is their
    median), and `<command>.mean_ms`, `median_ms`, `min_ms`, `max_ms` and `stddev_ms` (of a sample)
    are computed from them; a file without `times` gives hyperfine's own. `<command>.runs` counts
    the runs, the command as one name part (`sleep 0.01` -> `sleep_0_01`); the commands are the
    output's parameters."""
    fmt = "hyperfine-json"
    data = _json(text, fmt, "the file hyperfine --export-json FILE writes")
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, list) or not results:
        raise FormatError(f"{fmt}: the JSON has no `results` list with a command in it.")
    _series(fmt, len(results), "commands")
    out = Parsed()
    commands, runs = [], 0
    for i, r in enumerate(results):
        if not isinstance(r, dict) or _number(r.get("mean")) is None:
            raise FormatError(f"{fmt}: result {i} has no numeric `mean`.")
        command = str(r.get("command", f"command{i}"))
        name = _name_part(command, fmt, "command")
        commands.append(command)
        lo, hi = _number(r.get("min")), _number(r.get("max"))
        if lo is not None and hi is not None and lo > hi:
            raise FormatError(f"{fmt}: command {name} has min {lo:g} s above its max {hi:g} s.")
        times = _hyperfine_times(r, fmt, name)
        if times is None:
            for key in ("mean", "stddev", "median", "min", "max"):
                v = _number(r.get(key))
                if v is not None:
                    out.add(f"{name}.{key}_ms", v * 1e3, "ms", True)
        else:
            runs += len(times)
            if runs > MAX_SAMPLES:
                raise FormatError(f"{fmt}: the output has more than {MAX_SAMPLES} times, the most one "
                                  "measurement may have.")
            ordered = sorted(times)
            median = statistics.median(ordered)
            out.add(f"{name}.time_ms", median, "ms", True)
            out.samples[f"{name}.time_ms"] = times
            out.add(f"{name}.mean_ms", math.fsum(times) / len(times), "ms", True)
            out.add(f"{name}.median_ms", median, "ms", True)
            out.add(f"{name}.min_ms", ordered[0], "ms", True)
            out.add(f"{name}.max_ms", ordered[-1], "ms", True)
            if len(times) > 1:
                out.add(f"{name}.stddev_ms", statistics.stdev(times), "ms", True)
            out.add(f"{name}.runs", len(times), "count", False)
        for key in ("user", "system"):
            v = _number(r.get(key))
            if v is not None:
                out.add(f"{name}.{key}_ms", v * 1e3, "ms", True)
    out.parameters = {"commands": commands}
    return out


def _openssl_figure(out: Parsed, alg: str, size: int, bytes_per_s: float) -> None:
    out.add(f"{_name_part(alg, 'openssl-speed', 'algorithm')}.{size}B.bytes_per_s", bytes_per_s, "B/s", False)


#: block sizes of one `openssl speed` (it tests 6 by default)
_MAX_SIZES = 64


def openssl_speed(text: str) -> Parsed:
    """`openssl speed` of digests and ciphers, either form: with -mr, the `+H:<sizes>` line and
    one `+F:<n>:<alg>:<bytes/s>...` line per algorithm; without, the table after "The 'numbers'
    are in 1000s of bytes per second processed." (`type 16 bytes ...` and rows of `123.45k`).
    Figures `<alg>.<size>B.bytes_per_s`. Public-key lines (+F2 ..., sign/verify tables) are not read."""
    fmt = "openssl-speed"
    out = Parsed()
    sizes: list[int] = []
    algorithms = 0

    def block_sizes(found: list[str]) -> list[int]:
        if len(found) > _MAX_SIZES:
            raise FormatError(f"{fmt}: {len(found)} block sizes, more than the {_MAX_SIZES} read.")
        return [_int(x, fmt, "a block size") for x in found]

    for line in _lines(text, fmt):
        if line.startswith("+H:"):
            sizes = block_sizes([x for x in line[3:].split(":") if x.isascii() and x.isdigit()])
        elif line.startswith("+F:") and sizes:
            parts = line.split(":")
            if len(parts) >= 3 + len(sizes):
                algorithms += 1
                _series(fmt, algorithms, "algorithms")
                for size, v in zip(sizes, parts[3:3 + len(sizes)]):
                    _openssl_figure(out, parts[2], size, _float(v, fmt, f"the rate of {parts[2][:40]}"))
    if not out.figures:
        table = re.search(r"^type((?:\s+\d+ bytes)+)\s*$", text, re.MULTILINE)
        if table:
            sizes = block_sizes(re.findall(r"(\d+) bytes", table.group(1)))
            row = re.compile(r"^(\S.*?)((?:\s+\d+(?:\.\d+)?k){%d})\s*$" % len(sizes))
            for line in _lines(text[table.end():], fmt):
                m = row.match(line)
                if m:
                    algorithms += 1
                    _series(fmt, algorithms, "algorithms")
                    for size, v in zip(sizes, m.group(2).split()):
                        _openssl_figure(out, m.group(1).strip(), size, float(v[:-1]) * 1000)
    if not out.figures:
        raise FormatError(f"{fmt}: neither `+H:`/`+F:` lines (-mr) nor a `type ... bytes` table "
                          "with a row of rates (digests and ciphers are read, not public-key tests).")
    return out


def iperf3_json(text: str) -> Parsed:
    """What `iperf3 -c ... -J` prints: from its `end` object, `sent_bps`, `received_bps`,
    `sent_bytes`, `received_bytes` (sum_sent, sum_received), TCP `retransmits`, and for UDP
    (`end.sum` with jitter) `jitter_ms`, `lost_packets`, `lost_percent`, `packets`."""
    fmt = "iperf3-json"
    data = _json(text, fmt, "the output of iperf3 -J")
    if isinstance(data, dict) and isinstance(data.get("error"), str):
        raise FormatError(f"{fmt}: iperf3 reported an error: {' '.join(data['error'].split())[:200]}.")
    end = data.get("end") if isinstance(data, dict) else None
    if not isinstance(end, dict):
        raise FormatError(f"{fmt}: the JSON has no `end` object (did the test finish?).")
    out = Parsed()
    for key, side in (("sum_sent", "sent"), ("sum_received", "received")):
        s = end.get(key)
        if isinstance(s, dict):
            out.add(f"{side}_bps", _number(s.get("bits_per_second")), "bps", False)
            out.add(f"{side}_bytes", _number(s.get("bytes")), "B", False)
            if side == "sent" and _number(s.get("retransmits")) is not None:
                out.add("retransmits", _number(s.get("retransmits")), "count", True)
    udp = end.get("sum")
    if isinstance(udp, dict) and "jitter_ms" in udp:
        out.add("jitter_ms", _number(udp.get("jitter_ms")), "ms", True)
        out.add("lost_packets", _number(udp.get("lost_packets")), "count", True)
        out.add("lost_percent", _number(udp.get("lost_percent")), "%", True)
        out.add("packets", _number(udp.get("packets")), "count", False)
        lost, packets = out.figures.get("lost_packets"), out.figures.get("packets")
        if lost is not None and packets is not None and lost > packets:
            raise FormatError(f"{fmt}: `lost_packets` {lost:g} is more than the {packets:g} `packets` sent.")
        if "sent_bps" not in out.figures:        # iperf3 before sum_sent/sum_received for UDP
            out.add("sent_bps", _number(udp.get("bits_per_second")), "bps", False)
    if "sent_bps" not in out.figures and "received_bps" not in out.figures:
        raise FormatError(f"{fmt}: `end` has neither `sum_sent` nor `sum_received` with `bits_per_second`.")
    _iperf3_intervals(data.get("intervals"), out)
    start = data.get("start")
    test = start.get("test_start") if isinstance(start, dict) else None
    if isinstance(test, dict):
        # Its scalars only (protocol, streams, block size, duration, reverse ...): the rest is where
        # and when, which differ between runs of the same test.
        out.parameters = {k[:MAX_NAME]: v[:MAX_NAME] if isinstance(v, str) else v
                          for k, v in list(test.items())[:_MAX_TEST_KEYS] if isinstance(v, (str, int, float, bool))}
    return out


#: the keys of iperf3's `test_start` kept as parameters (it has about 12)
_MAX_TEST_KEYS = 64


def _iperf3_intervals(intervals: Any, out: Parsed) -> None:
    """iperf3's intervals as the series `bps` (each interval's end and rate over every stream), and
    the slowest and fastest interval as `interval_min_bps` and `interval_max_bps`."""
    fmt = "iperf3-json"
    if not isinstance(intervals, list):
        return
    if len(intervals) > MAX_INTERVALS:
        raise FormatError(f"{fmt}: the output has {len(intervals)} intervals, more than the {MAX_INTERVALS} "
                          "one measurement may have.")
    points = []
    for i, interval in enumerate(intervals):
        total = interval.get("sum") if isinstance(interval, dict) else None
        end, bps = (_number(total.get("end")), _number(total.get("bits_per_second"))) if isinstance(total, dict) \
            else (None, None)
        if end is None or bps is None:
            raise FormatError(f"{fmt}: interval {i} has no `sum` with `end` and `bits_per_second`.")
        if not math.isfinite(end) or not math.isfinite(bps) or end < 0 or bps < 0:
            raise FormatError(f"{fmt}: interval {i} ends at {end:g} s with {bps:g} bit/s; neither may be below 0.")
        points.append([end, bps])
    if points:
        out.series["bps"] = points
        out.add("interval_min_bps", min(p[1] for p in points), "bps", False)
        out.add("interval_max_bps", max(p[1] for p in points), "bps", False)


# -- mapping: named figures picked out of any output -------------------------------------------

def _re2_options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False          # its reason is in the exception, said to the user once
    return options


def compile_regex(pattern: str) -> re2.Pattern:
    """A mapping's regex on RE2, whose time is linear in the text whatever the pattern (no
    backtracking); `^` and `$` match at every line. ValueError with RE2's reason when RE2 cannot
    run it (backreferences and lookaround are what Python's `re` has and RE2 has not)."""
    try:
        return re2.compile("(?m)" + pattern, _re2_options())
    except re2.error as e:
        reason = e.args[0].decode(errors="replace") if e.args and isinstance(e.args[0], bytes) else str(e)
        raise ValueError(f"is not a regular expression RE2 can run ({reason}; backreferences and lookarounds "
                         "are not supported)") from None


def mapping(text: str, figures: list[dict[str, Any]]) -> Parsed:
    """Named figures, each picked out by a regex's capture group (the first match in the text)
    or a json_path (JMESPath, json_paths.py) into the output read as JSON; every figure must be found."""
    fmt = "mapping"
    out = Parsed(strict=False)
    data: Any = None
    utf8_text: str | None = None
    for f in figures:
        if f.get("json_path"):
            # The reason after a long path must survive the sentence's cut at 300 characters.
            path = f["json_path"] if len(f["json_path"]) <= 80 else f["json_path"][:77] + "..."
            if data is None:
                data = _json(text, fmt, f"JSON for json_path {path}")
            try:
                value = json_paths.search(json_paths.compile_path(f["json_path"]), data)
            # ValueError: a figure the campaign check did not see (a stored spec's).
            except (ValueError, json_paths.PathFailed) as e:
                raise FormatError(f"{fmt}: json_path {path} of figure {f['name']} {e}.") from None
            if isinstance(value, str):
                try:
                    value = float(value)
                except ValueError:
                    value = None
            value = _number(value)
            if value is None:
                raise FormatError(f"{fmt}: json_path {path} of figure {f['name']} "
                                  "leads to no number in the output.")
        else:
            if utf8_text is None:
                # RE2 reads UTF-8: bytes a tool printed that were not are stood in for.
                utf8_text = text.encode("utf-8", "replace").decode("utf-8")
            m = compile_regex(f["regex"]).search(utf8_text)
            if not m:
                raise FormatError(f"{fmt}: regex {f['regex']} of figure {f['name']} matches nothing in the output.")
            try:
                value = float(m.group(1))
            except (TypeError, ValueError):
                raise FormatError(f"{fmt}: the capture of regex {f['regex']} of figure {f['name']} "
                                  f"is not a number ({str(m.group(1))[:40]!r}).") from None
        if not math.isfinite(value):
            raise FormatError(f"{fmt}: figure {f['name']} is {value}, not a finite number.")
        out.add(f["name"], value, f["unit"], f["direction"] == "lower")
    return out


#: format name -> parser of a whole output (mapping also takes its figures)
PARSERS: dict[str, Callable[[str], Parsed]] = {
    "cyclictest-json": cyclictest_json,
    "cyclictest-hist": cyclictest_hist,
    "rtla-timerlat": rtla_timerlat,
    "rtla-timerlat-hist": rtla_timerlat_hist,
    "rtla-osnoise": rtla_osnoise,
    "stress-ng-yaml": stress_ng_yaml,
    "hyperfine-json": hyperfine_json,
    "openssl-speed": openssl_speed,
    "iperf3-json": iperf3_json,
}
FORMATS = (*PARSERS, "mapping")

#: the figure names each built-in format can yield, for requirements on them at validation
_T = r"(min|avg|max|p50|p90|p99|p999)_us"
FIGURE_NAMES: dict[str, re.Pattern] = {
    "cyclictest-json": re.compile(rf"^(cpu\d+\.)?({_T}|count)$"),
    "cyclictest-hist": re.compile(rf"^(thread\d+\.)?({_T}|count|overflows)$"),
    "rtla-timerlat": re.compile(r"^(cpu\d+\.)?((irq|thread|user)_(min|avg|max)_(us|ns)|count)$"),
    "rtla-timerlat-hist": re.compile(r"^(cpu\d+\.)?(irq|thread|user)_((min|avg|max|p50|p90|p99|p999)_us|count|overflows)$"),
    "rtla-osnoise": re.compile(r"^(cpu\d+\.)?(" + "|".join(_OSNOISE_COLUMNS) + r")$|^cpu\d+\.periods$"),
    "stress-ng-yaml": re.compile(r"^[A-Za-z0-9_-]+\.(bogo_ops|bogo_ops_per_s|bogo_ops_per_cpu_s|wall_s|user_s|system_s"
                                 r"|max_rss_bytes)$"),
    "hyperfine-json": re.compile(r"^[A-Za-z0-9_-]+\.((time|mean|stddev|median|min|max|user|system)_ms|runs)$"),
    "openssl-speed": re.compile(r"^[A-Za-z0-9_-]+\.\d+B\.bytes_per_s$"),
    "iperf3-json": re.compile(r"^((sent|received)_(bps|bytes)|interval_(min|max)_bps|retransmits|jitter_ms|lost_packets"
                              r"|lost_percent|packets)$"),
}


def histogram_problem(histograms: dict[str, list[list[int]]]) -> str | None:
    """What puts stored histograms beyond the bounds a report can draw quickly, None when nothing."""
    if len(histograms) > MAX_SERIES + 1:
        return f"{len(histograms)} histograms, more than one per thread or CPU ({MAX_SERIES}) and one merged"
    cells = 0
    for key, buckets in histograms.items():
        size = len(buckets) if isinstance(buckets, list) else 0
        if size > MAX_BUCKETS:
            return f"histogram {key} has {size} buckets, more than the {MAX_BUCKETS} one may have"
        cells += size
    if cells > MAX_HISTOGRAM_CELLS:
        return f"the histograms have {cells} buckets in all, more than the {MAX_HISTOGRAM_CELLS} one output may have"
    return None


def _one_sentence(text: str) -> str:
    return " ".join(text.split())[:300]


def parse(fmt: str, text: str, figures: list[dict[str, Any]] | None = None) -> Parsed:
    """The figures of one output in format `fmt`: FormatError when they are not there, break a
    rule, or the output is beyond a limit; no other exception, whatever the text."""
    if fmt != "mapping" and fmt not in PARSERS:
        raise FormatError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)}).")
    if len(text) > MAX_OUTPUT_BYTES:
        raise FormatError(f"{fmt}: the output has {len(text):,} characters, more than the {MAX_OUTPUT_BYTES:,} "
                          "one output may have.")
    try:
        out = mapping(text, figures or []) if fmt == "mapping" else PARSERS[fmt](text)
    except FormatError as e:
        message = _one_sentence(str(e))
        raise FormatError(message if message.startswith(fmt) else f"{fmt}: {message}") from None
    except (ValueError, ArithmeticError, RecursionError) as e:
        raise FormatError(f"{fmt}: the output could not be read ({type(e).__name__}: "
                          f"{_one_sentence(str(e))}).") from None
    problem = histogram_problem(out.histograms)
    if problem:
        raise FormatError(f"{fmt}: {problem}.")
    return out
