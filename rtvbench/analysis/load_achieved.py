"""What each probe load actually achieved during a measurement (docs/probe/load.md, "How
achieved figures are measured"): "cpu50 held 49.6 % on 2 CPUs (CPU 0: 49.8 %, CPU 1: 49.4 %)",
"mem: 5.10 GB/s".

The figures are the load's `result` record: its whole run, from its start (before the
measurement's settle time) to its stop (right after the probe ended), so they describe the
load the measurement ran under. A load killed before it printed its result (SIGKILL after
the stop grace period) is described from its windows instead. External command loads print
no such records; the /proc/stat accounting still shows what they did to the CPUs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rtvbench.analysis.dataset import COMPLETE, RunData
from rtvbench.units import human_duration, human_rate, human_size, measured_size, significant
from rtvbench.results import Measurement

MIB = 1 << 20

#: counters and figures worth carrying, per kind (docs/probe/load.md, the window table)
EXTRA = {
    "cpu": ("short_periods",),
    "mem": ("passes",),
    "io": ("fsyncs", "bytes_written", "bytes_read"),
    "fork": ("fork_failures",),
    "leak": ("leaked_bytes", "rss_bytes", "rss_peak_bytes", "holding", "limit_reached_ns"),
    "timer": ("missed", "late_avg_ns", "late_max_ns"),
    "net": ("bytes_sent",),
    "disrupt": ("events",),
}
#: load parameters (meta.params) the sentences quote
PARAMS = ("percent", "op", "limit_bytes", "rate_bps", "rate_hz", "buffer_size_bytes", "fsync")


@dataclass
class Achieved:
    load: str                               # the load's name (a part's name inside a combination)
    kind: str
    achieved_percent: float | None          # mean CPU share of the load's threads (100 = one CPU)
    per_cpu: dict[str, float] = field(default_factory=dict)    # "CPU 1" or "worker 0" -> % of that CPU
    pinned: bool = False
    workers: int | None = None
    bps: float | None = None
    ops_per_s: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    status: str | None = None               # the load's end status: "interrupted" is the normal stop
    n: int = 1                              # measurements averaged
    percent_values: list[float] = field(default_factory=list)   # achieved_percent of each measurement

    @property
    def nothing(self) -> bool:
        """The load did not do its work at all (0 B/s, no CPU, no fork): the measurement it ran beside
        was not under this load, whatever its name says."""
        if self.kind == "cpu":
            return not self.achieved_percent or self.achieved_percent < 0.5
        if self.kind in ("mem", "cache", "io", "net"):
            return not self.bps
        if self.kind in ("fork", "timer"):
            return not self.ops_per_s
        if self.kind == "disrupt":
            return not self.extra.get("events")
        if self.kind == "leak":
            return not self.bps and not self.extra.get("leaked_bytes")
        return False

    def to_dict(self) -> dict[str, Any]:
        return {"load": self.load, "kind": self.kind, "achieved_nothing": self.nothing,
                "achieved_percent": self.achieved_percent,
                "per_cpu_percent": dict(self.per_cpu), "pinned": self.pinned, "workers": self.workers,
                "achieved_bps": self.bps, "achieved_ops_per_s": self.ops_per_s, "n": self.n,
                **{k: v for k, v in self.extra.items()}, "status": self.status}


def _from_windows(windows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A result-like record from the windows alone (the load died before printing its result)."""
    if not windows:
        return None
    span = sum(max(0, (w.get("t_end_ns") or 0) - (w.get("t_start_ns") or 0)) for w in windows)
    if span <= 0:
        return None
    out: dict[str, Any] = {"kind": windows[-1].get("kind"), "workers": windows[-1].get("workers") or []}
    for key in ("achieved_percent", "achieved_bps", "achieved_ops_per_s"):
        vals = [(w[key], (w.get("t_end_ns") or 0) - (w.get("t_start_ns") or 0)) for w in windows
                if isinstance(w.get(key), (int, float))]
        if vals:
            out[key] = sum(v * d for v, d in vals) / max(1, sum(d for _, d in vals))
    for key in ("short_periods", "passes", "fsyncs", "fork_failures", "missed", "bytes_written", "bytes_read",
                "bytes_sent"):
        vals = [w[key] for w in windows if isinstance(w.get(key), (int, float))]
        if vals:
            out[key] = sum(vals)
    for key in ("leaked_bytes", "rss_bytes", "holding", "late_avg_ns"):
        if key in windows[-1]:
            out[key] = windows[-1][key]
    rss = [w["rss_bytes"] for w in windows if isinstance(w.get("rss_bytes"), (int, float))]
    if rss:
        out["rss_peak_bytes"] = max(rss)
    return out


def load_achieved(name: str, records: list[dict[str, Any]]) -> Achieved | None:
    """The achieved figures of one load from its records, or None if it measured nothing."""
    meta = next((r for r in records if r.get("type") == "meta"), None) or {}
    params = meta.get("params") or {}
    result = next((r for r in records if r.get("type") == "result"), None)
    if result is None:
        result = _from_windows([r for r in records if r.get("type") == "window"])
    if result is None:
        return None
    end = next((r for r in records if r.get("type") == "end"), None) or {}
    kind = str(result.get("kind") or params.get("kind") or "?")
    per_cpu: dict[str, float] = {}
    pinned = False
    threads = [w for w in result.get("workers") or [] if isinstance(w, dict)]
    for w in threads:
        pct = w.get("achieved_percent")
        if not isinstance(pct, (int, float)):
            continue
        if w.get("cpu") is not None:
            pinned = True
            label = f"CPU {w['cpu']}"
        else:
            label = f"worker {w.get('worker')}" + (f" {w['role']}" if w.get("role") not in (None, "worker") else "")
        # Threads sharing a CPU add up: the CPU's share taken by this load.
        per_cpu[label] = per_cpu.get(label, 0.0) + float(pct)
    pct = result.get("achieved_percent")
    extra = {k: result[k] for k in EXTRA.get(kind, ()) if k in result}
    if kind == "leak" and "limit_bytes" in params:
        extra["limit_bytes"] = params["limit_bytes"]
    return Achieved(
        load=name, kind=kind, achieved_percent=float(pct) if isinstance(pct, (int, float)) else None,
        per_cpu=per_cpu, pinned=pinned,
        workers=params.get("workers") or len({w.get("worker") for w in threads}) or None,
        bps=_num(result.get("achieved_bps")), ops_per_s=_num(result.get("achieved_ops_per_s")),
        extra=extra, params={k: params[k] for k in PARAMS if k in params}, status=end.get("status"),
        percent_values=[float(pct)] if isinstance(pct, (int, float)) else [])


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def measurement_achieved(m: Measurement, order: list[str] | None = None) -> list[Achieved]:
    """Every probe load of a measurement (in `order`, e.g. a combination's parts, when given)."""
    names = list(m.load_records)
    if order:
        names = [n for n in order if n in m.load_records] + [n for n in names if n not in order]
    out = []
    for name in names:
        a = load_achieved(name, m.load_records[name])
        if a is not None:
            out.append(a)
    return out


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def mean_achieved(per_measurement: list[list[Achieved]]) -> list[Achieved]:
    """One Achieved per load: the mean of each figure over the measurements that have it."""
    by_load: dict[str, list[Achieved]] = {}
    for achieved in per_measurement:
        for a in achieved:
            by_load.setdefault(a.load, []).append(a)
    out = []
    for name, items in by_load.items():
        first = items[0]
        labels = list(dict.fromkeys(label for a in items for label in a.per_cpu))
        extra: dict[str, Any] = {}
        for key in dict.fromkeys(k for a in items for k in a.extra):
            vals = [a.extra[key] for a in items if key in a.extra and a.extra[key] is not None]
            if not vals:
                extra[key] = None
            elif all(isinstance(v, bool) for v in vals):
                extra[key] = all(vals)
            elif key in ("rss_peak_bytes", "late_max_ns", "limit_reached_ns", "limit_bytes"):
                extra[key] = max(vals)
            else:
                extra[key] = _mean([float(v) for v in vals])
        out.append(Achieved(
            load=name, kind=first.kind,
            achieved_percent=_mean([a.achieved_percent for a in items if a.achieved_percent is not None]),
            per_cpu={label: _mean([a.per_cpu[label] for a in items if label in a.per_cpu]) for label in labels},
            pinned=first.pinned, workers=first.workers,
            bps=_mean([a.bps for a in items if a.bps is not None]),
            ops_per_s=_mean([a.ops_per_s for a in items if a.ops_per_s is not None]),
            extra=extra, params=first.params, status=None, n=len(items),
            percent_values=[v for a in items for v in a.percent_values]))
    return out


def load_order(data: RunData, load: str) -> list[str]:
    """The parts of a combined load in the order the campaign lists them, else the load itself."""
    spec = data.load(load)
    return list(spec.parts) if spec is not None and spec.parts else [load]


def cell_achieved(data: RunData, env: str, load: str, bench: str) -> list[Achieved]:
    """What each probe load of a cell achieved, averaged over its completed repetitions."""
    order = load_order(data, load)
    return mean_achieved([measurement_achieved(m, order)
                          for m in data.measurements(env, load, bench, COMPLETE)])


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{significant(v)} %"


def describe(a: Achieved, quote: bool = True) -> str:
    """One phrase per load, the way an evaluation report would write it; a load that achieved nothing
    is said to have, so that no figure beside it passes for a figure under load."""
    text = _describe(a, quote)
    if a.nothing:
        text += " — it achieved nothing: the measurement ran without this load"
    return text


def _describe(a: Achieved, quote: bool = True) -> str:
    name = f"`{a.load}`" if quote else a.load
    x = a.extra
    if a.kind == "cpu":
        n = len(a.per_cpu)
        where = (f"on {n} CPU{'s' if n != 1 else ''}" if a.pinned
                 else f"in {n} unpinned worker{'s' if n != 1 else ''}")
        if a.pinned and a.workers and a.workers > n:
            # Several workers share a CPU: the headline is per worker, the CPUs' shares add up.
            where = f"per worker, {a.workers} workers {where}"
        text = f"{name} held {_pct(a.achieved_percent)} {where}"
        if n > 1 or not a.pinned:
            text += " (" + ", ".join(f"{label}: {_pct(v)}" for label, v in a.per_cpu.items()) + ")"
        target = a.params.get("percent")
        if isinstance(target, (int, float)):
            text += f", target {target:g} %"
        if x.get("short_periods"):
            text += f", {x['short_periods']:,.0f} period{'s' if x['short_periods'] != 1 else ''} short of budget"
        return text
    if a.kind == "mem":
        return f"{name}: {human_rate(a.bps)} ({a.params.get('op', 'copy')})"
    if a.kind == "cache":
        return f"{name}: {human_rate(a.ops_per_s, ' lines/s').replace('  ', ' ')} ({human_rate(a.bps)})"
    if a.kind == "io":
        text = f"{name}: {human_rate(a.bps)} written and read back"
        if a.ops_per_s is not None:
            text += f", {significant(a.ops_per_s)} write-fsync-read cycles/s"
        return text
    if a.kind == "fork":
        text = f"{name}: {a.ops_per_s or 0:,.0f} forks/s"
        if x.get("fork_failures"):
            text += f", {x['fork_failures']:,.0f} failed forks"
        return text
    if a.kind == "leak":
        text = f"{name}: grew at {significant((a.bps or 0) / MIB)} MiB/s"
        if isinstance(x.get("leaked_bytes"), (int, float)):
            text += f" to {measured_size(x['leaked_bytes'])}"
        if isinstance(x.get("limit_bytes"), (int, float)):
            text += f" (limit {human_size(x['limit_bytes'])})"
        if isinstance(x.get("rss_peak_bytes"), (int, float)):
            text += f", RSS peak {measured_size(x['rss_peak_bytes'])}"
        if x.get("holding"):
            text += ", holding at the limit"
        return text
    if a.kind == "timer":
        text = f"{name}: {a.ops_per_s or 0:,.0f} wake-ups/s"
        if isinstance(x.get("late_avg_ns"), (int, float)):
            text += f", mean lateness {human_duration(x['late_avg_ns'])}"
        if x.get("missed"):
            text += f", {x['missed']:,.0f} deadlines overslept"
        return text
    if a.kind == "net":
        return f"{name}: {human_rate(a.bps)} over loopback TCP"
    if a.kind == "disrupt":
        n = x.get("events") or 0
        return f"{name}: {n:,.0f} guest {'restarts' if n != 1 else 'restart'} during the measurement"
    return f"{name}: {_pct(a.achieved_percent)} of a CPU per thread"


def describe_all(achieved: list[Achieved], quote: bool = True) -> str:
    return "; ".join(describe(a, quote) for a in achieved)
