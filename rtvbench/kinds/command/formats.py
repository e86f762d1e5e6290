"""The parsers of the `command` kind: an external tool's output as named figures.

A leaf module (it imports nothing of rtvbench): the campaign stage checks format names and
figure names with it, the runner parses a measured command's output with it, `rtvbench import`
parses a file made elsewhere with it, and the stored figures are what analysis reads. Each
parser reads the form the tool itself writes, documented in docs/command.md.

A parser returns `Parsed`: figures (name -> value), each with its unit and whether lower is
better, and histograms (name -> [[lo_ns, hi_ns, count], ...]). A parser that cannot find what
its format promises raises FormatError with one sentence naming the format and what was missing.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable

#: units a figure may have; `us`, `ms` and `ns` are times, the rest as written in reports
UNITS = ("ns", "us", "ms", "s", "count", "bps", "B/s", "/s", "%", "B")


class FormatError(ValueError):
    """Output a parser cannot read; the message is one sentence."""


@dataclass
class Parsed:
    figures: dict[str, float] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    lower_is_better: dict[str, bool] = field(default_factory=dict)
    #: "all", "cpu<N>" or "thread<N>" -> buckets [lo_ns, hi_ns, count]
    histograms: dict[str, list[list[int]]] = field(default_factory=dict)

    def add(self, name: str, value: float, unit: str, lower: bool) -> None:
        if value is None or not math.isfinite(value):
            return
        self.figures[name] = float(value)
        self.units[name] = unit
        self.lower_is_better[name] = lower

    def record(self, fmt: str) -> dict[str, Any]:
        """The stored `result` record of a measurement."""
        return {"type": "result", "format": fmt, "figures": self.figures, "units": self.units,
                "lower_is_better": self.lower_is_better, "histograms": self.histograms}


def figure_token(text: str) -> str:
    """A tool's name for something (a command line, an algorithm) as one part of a figure name:
    letters, digits, '_' and '-' only, so that '.' keeps separating the parts."""
    token = re.sub(r"[^A-Za-z0-9_-]+", "_", text).strip("_")
    return token or "unnamed"


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def _json(text: str, fmt: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise FormatError(f"{fmt}: the output is not JSON ({e.msg} at line {e.lineno}); "
                          f"expected {what}.") from None


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


def _us_buckets(counts: dict[int, int]) -> list[list[int]]:
    """cyclictest's 1 us histogram bins as [lo_ns, hi_ns, count]."""
    return [[us * 1000, (us + 1) * 1000, n] for us, n in sorted(counts.items()) if n > 0]


def cyclictest_json(text: str) -> Parsed:
    """The file `cyclictest --json=FILE` writes: per thread `cycles`, `min`, `avg`, `max` (us),
    `cpu`, and with -h/-H a `histogram` of 1 us bins. Threads on one CPU are merged into that
    CPU's figures (`cpu<N>.max_us`); the merged figures are over every thread."""
    fmt = "cyclictest-json"
    data = _json(text, fmt, "the file cyclictest --json=FILE writes")
    threads = data.get("thread") if isinstance(data, dict) else None
    if not isinstance(threads, dict) or not threads:
        raise FormatError(f"{fmt}: the JSON has no `thread` object with a thread in it "
                          "(is it the file cyclictest --json=FILE wrote?).")
    out = Parsed()
    merged, per_cpu = _Stats(), {}
    hist_all: dict[int, int] = {}
    hist_cpu: dict[int, dict[int, int]] = {}
    for key, t in sorted(threads.items(), key=lambda kv: int(kv[0]) if str(kv[0]).isdigit() else 0):
        values = [_number(t.get(k)) if isinstance(t, dict) else None for k in ("cycles", "min", "avg", "max")]
        if any(v is None for v in values):
            raise FormatError(f"{fmt}: thread {key} lacks one of `cycles`, `min`, `avg`, `max`.")
        cycles, lo, avg, hi = values
        cpu = t.get("cpu")
        cpu = cpu if isinstance(cpu, int) and not isinstance(cpu, bool) and cpu >= 0 else int(key)
        merged.add(int(cycles), lo, avg, hi)
        per_cpu.setdefault(cpu, _Stats()).add(int(cycles), lo, avg, hi)
        hist = t.get("histogram")
        if isinstance(hist, dict):
            for us, n in hist.items():
                if str(us).isdigit() and isinstance(n, int):
                    hist_all[int(us)] = hist_all.get(int(us), 0) + n
                    cpu_hist = hist_cpu.setdefault(cpu, {})
                    cpu_hist[int(us)] = cpu_hist.get(int(us), 0) + n
    merged.put(out, "")
    out.add("count", merged.count, "count", False)
    for cpu, stats in sorted(per_cpu.items()):
        stats.put(out, f"cpu{cpu}.")
        out.add(f"cpu{cpu}.count", stats.count, "count", False)
    if hist_all:
        out.histograms["all"] = _us_buckets(hist_all)
        out.histograms.update({f"cpu{cpu}": _us_buckets(h) for cpu, h in hist_cpu.items()})
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
    for line in text.splitlines():
        line = line.strip()
        m = _HIST_SUMMARY.match(line)
        if m:
            summary[m.group(1)] = [int(x) for x in m.group(2).split()]
            continue
        m = _HIST_ROW.match(line)
        if m:
            bins[int(m.group(1))] = [int(x) for x in m.group(2).split()]
    missing = [k for k in ("Total", "Min Latencies", "Avg Latencies", "Max Latencies") if k not in summary]
    if missing:
        raise FormatError(f"{fmt}: no `# {missing[0]}:` line (is it cyclictest's output with -h or -H?).")
    # With -H, the bins, Total, Max and Overflows have one more column, over all threads: left out
    # here, the merged figures are computed from the threads' own.
    n = len(summary["Min Latencies"])
    if any(len(v) not in (n, n + 1) for v in [*summary.values(), *bins.values()]):
        raise FormatError(f"{fmt}: the histogram and summary lines disagree on the number of threads.")
    summary = {k: v[:n] for k, v in summary.items()}
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
    for line in text.splitlines():
        # A row may end with a remark ("<--- CPU with spike" in rtla's documentation).
        cells = line.split("<")[0].split("|")
        head = re.match(r"^\s*(\d+)\s+#(\d+)\s*$", cells[0])
        groups = [c.split() for c in cells[1:]]
        if not head or not 2 <= len(groups) <= 3 or any(len(g) != 4 for g in groups):
            continue
        try:
            values = [[float(x) for x in g] for g in groups]
        except ValueError:
            continue
        cpu, count = int(head.group(1)), int(head.group(2))
        rows += 1
        total += count
        out.add(f"cpu{cpu}.count", count, "count", False)
        for i, (_, lo, avg, hi) in enumerate(values):
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
    for line in text.splitlines():
        m = row.match(line.rstrip())
        if not m or len(m.group(3).split()) != len(_OSNOISE_COLUMNS):
            continue
        rows += 1
        cpu = int(m.group(1))
        values = dict(zip(_OSNOISE_COLUMNS, (float(x) for x in m.group(3).split())))
        out.add(f"cpu{cpu}.periods", int(m.group(2)), "count", False)
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

_YAML_ENTRY = re.compile(r"^\s*-\s+stressor:\s*(\S+)\s*$")
_YAML_FIELD = re.compile(r"^\s+([a-z][a-z0-9-]*):\s*(-?[0-9.]+(?:[eE][-+]?\d+)?)\s*$")
_STRESS_FIGURES = {
    # stress-ng's key -> (figure, unit, lower is better)
    "bogo-ops": ("bogo_ops", "count", False),
    "bogo-ops-per-second-real-time": ("bogo_ops_per_s", "/s", False),
    "bogo-ops-per-second-usr-sys-time": ("bogo_ops_per_cpu_s", "/s", False),
    "wall-clock-time": ("wall_s", "s", True),
}


def stress_ng_yaml(text: str) -> Parsed:
    """The file `stress-ng --metrics --yaml FILE` writes: its `metrics:` list, one entry per
    stressor. Figures `<stressor>.bogo_ops_per_s` (real time), `<stressor>.bogo_ops_per_cpu_s`
    (per second of user + system time), `<stressor>.bogo_ops` and `<stressor>.wall_s`.
    Read line by line (the list is flat), so that no YAML library is needed."""
    fmt = "stress-ng-yaml"
    out = Parsed()
    stressor: str | None = None
    in_metrics = False
    for line in text.splitlines():
        if re.match(r"^metrics:\s*$", line):
            in_metrics = True
            continue
        if in_metrics and re.match(r"^\S", line):
            in_metrics = False          # the next top-level section
        if not in_metrics:
            continue
        m = _YAML_ENTRY.match(line)
        if m:
            stressor = figure_token(m.group(1))
            continue
        m = _YAML_FIELD.match(line)
        if m and stressor and m.group(1) in _STRESS_FIGURES:
            name, unit, lower = _STRESS_FIGURES[m.group(1)]
            out.add(f"{stressor}.{name}", float(m.group(2)), unit, lower)
    if not any(name.endswith(".bogo_ops_per_s") for name in out.figures):
        raise FormatError(f"{fmt}: no `metrics:` entry with `bogo-ops-per-second-real-time` "
                          "(was stress-ng run with --metrics and --yaml FILE?).")
    return out


def hyperfine_json(text: str) -> Parsed:
    """The file `hyperfine --export-json FILE` writes: per command its `mean`, `stddev`,
    `median`, `min`, `max`, `user`, `system` (seconds). Figures `<command>.mean_ms` ...
    and `<command>.runs`, the command as one name part (`sleep 0.01` -> `sleep_0_01`)."""
    fmt = "hyperfine-json"
    data = _json(text, fmt, "the file hyperfine --export-json FILE writes")
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, list) or not results:
        raise FormatError(f"{fmt}: the JSON has no `results` list with a command in it.")
    out = Parsed()
    for i, r in enumerate(results):
        if not isinstance(r, dict) or _number(r.get("mean")) is None:
            raise FormatError(f"{fmt}: result {i} has no numeric `mean`.")
        name = figure_token(str(r.get("command", f"command{i}")))
        for key in ("mean", "stddev", "median", "min", "max", "user", "system"):
            v = _number(r.get(key))
            if v is not None:
                out.add(f"{name}.{key}_ms", v * 1e3, "ms", True)
        if isinstance(r.get("times"), list):
            out.add(f"{name}.runs", len(r["times"]), "count", False)
    return out


def _openssl_figure(out: Parsed, alg: str, size: int, bytes_per_s: float) -> None:
    out.add(f"{figure_token(alg)}.{size}B.bytes_per_s", bytes_per_s, "B/s", False)


def openssl_speed(text: str) -> Parsed:
    """`openssl speed` of digests and ciphers, either form: with -mr, the `+H:<sizes>` line and
    one `+F:<n>:<alg>:<bytes/s>...` line per algorithm; without, the table after "The 'numbers'
    are in 1000s of bytes per second processed." (`type 16 bytes ...` and rows of `123.45k`).
    Figures `<alg>.<size>B.bytes_per_s`. Public-key lines (+F2 ..., sign/verify tables) are not read."""
    fmt = "openssl-speed"
    out = Parsed()
    sizes: list[int] = []
    for line in text.splitlines():
        if line.startswith("+H:"):
            sizes = [int(x) for x in line[3:].split(":") if x.isdigit()]
        elif line.startswith("+F:") and sizes:
            parts = line.split(":")
            if len(parts) >= 3 + len(sizes):
                for size, v in zip(sizes, parts[3:3 + len(sizes)]):
                    _openssl_figure(out, parts[2], size, float(v))
    if not out.figures:
        table = re.search(r"^type((?:\s+\d+ bytes)+)\s*$", text, re.MULTILINE)
        if table:
            sizes = [int(x) for x in re.findall(r"(\d+) bytes", table.group(1))]
            row = re.compile(r"^(\S.*?)((?:\s+\d+(?:\.\d+)?k){%d})\s*$" % len(sizes))
            for line in text[table.end():].splitlines():
                m = row.match(line)
                if m:
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
        raise FormatError(f"{fmt}: iperf3 reported an error: {data['error']}.")
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
        if "sent_bps" not in out.figures:        # iperf3 before sum_sent/sum_received for UDP
            out.add("sent_bps", _number(udp.get("bits_per_second")), "bps", False)
    if "sent_bps" not in out.figures and "received_bps" not in out.figures:
        raise FormatError(f"{fmt}: `end` has neither `sum_sent` nor `sum_received` with `bits_per_second`.")
    return out


# -- mapping: named figures picked out of any output -------------------------------------------

_PATH_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def json_path_parts(path: str) -> list[str | int] | None:
    """`a.b[0].c` as ["a", "b", 0, "c"], None when it is not such a path."""
    parts: list[str | int] = []
    pos = 0
    while pos < len(path):
        if path[pos] == "." and parts and pos + 1 < len(path) and path[pos + 1] != "[":
            pos += 1
        m = _PATH_PART.match(path, pos)
        if not m:
            return None
        parts.append(m.group(1) if m.group(1) is not None else int(m.group(2)))
        pos = m.end()
    return parts or None


def _follow(data: Any, parts: list[str | int]) -> Any:
    for p in parts:
        if isinstance(p, int) and isinstance(data, list) and p < len(data):
            data = data[p]
        elif isinstance(p, str) and isinstance(data, dict) and p in data:
            data = data[p]
        else:
            return None
    return data


def mapping(text: str, figures: list[dict[str, Any]]) -> Parsed:
    """Named figures, each picked out by a regex's capture group (the first match in the text)
    or a json_path into the output read as JSON; every figure must be found."""
    fmt = "mapping"
    out = Parsed()
    data: Any = None
    for f in figures:
        if f.get("json_path"):
            if data is None:
                data = _json(text, fmt, f"JSON for json_path {f['json_path']}")
            value = _follow(data, json_path_parts(f["json_path"]) or [])
            if isinstance(value, str):
                try:
                    value = float(value)
                except ValueError:
                    value = None
            value = _number(value)
            if value is None:
                raise FormatError(f"{fmt}: json_path {f['json_path']} of figure {f['name']} "
                                  "leads to no number in the output.")
        else:
            m = re.search(f["regex"], text, re.MULTILINE)
            if not m:
                raise FormatError(f"{fmt}: regex {f['regex']} of figure {f['name']} matches nothing in the output.")
            try:
                value = float(m.group(1))
            except (TypeError, ValueError):
                raise FormatError(f"{fmt}: the capture of regex {f['regex']} of figure {f['name']} "
                                  f"is not a number ({m.group(1)!r}).") from None
        out.add(f["name"], value, f["unit"], f["direction"] == "lower")
    return out


#: format name -> parser of a whole output (mapping also takes its figures)
PARSERS: dict[str, Callable[[str], Parsed]] = {
    "cyclictest-json": cyclictest_json,
    "cyclictest-hist": cyclictest_hist,
    "rtla-timerlat": rtla_timerlat,
    "rtla-osnoise": rtla_osnoise,
    "stress-ng-yaml": stress_ng_yaml,
    "hyperfine-json": hyperfine_json,
    "openssl-speed": openssl_speed,
    "iperf3-json": iperf3_json,
}
FORMATS = (*PARSERS, "mapping")

#: the figure names each built-in format can yield, for requirements on them at validation
_T = r"(min|avg|max)_us"
FIGURE_NAMES: dict[str, re.Pattern] = {
    "cyclictest-json": re.compile(rf"^(cpu\d+\.)?({_T}|count)$"),
    "cyclictest-hist": re.compile(rf"^(thread\d+\.)?({_T}|count|overflows)$"),
    "rtla-timerlat": re.compile(r"^(cpu\d+\.)?((irq|thread|user)_(min|avg|max)_(us|ns)|count)$"),
    "rtla-osnoise": re.compile(r"^(cpu\d+\.)?(" + "|".join(_OSNOISE_COLUMNS) + r")$|^cpu\d+\.periods$"),
    "stress-ng-yaml": re.compile(r"^[A-Za-z0-9_-]+\.(bogo_ops|bogo_ops_per_s|bogo_ops_per_cpu_s|wall_s)$"),
    "hyperfine-json": re.compile(r"^[A-Za-z0-9_-]+\.((mean|stddev|median|min|max|user|system)_ms|runs)$"),
    "openssl-speed": re.compile(r"^[A-Za-z0-9_-]+\.\d+B\.bytes_per_s$"),
    "iperf3-json": re.compile(r"^((sent|received)_(bps|bytes)|retransmits|jitter_ms|lost_packets|lost_percent"
                              r"|packets)$"),
}


def parse(fmt: str, text: str, figures: list[dict[str, Any]] | None = None) -> Parsed:
    """The figures of one output in format `fmt` (FormatError when they are not there)."""
    if fmt == "mapping":
        return mapping(text, figures or [])
    if fmt not in PARSERS:
        raise FormatError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)}).")
    return PARSERS[fmt](text)
