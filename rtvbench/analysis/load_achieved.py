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

from typing import Any

from rtvbench.analysis.dataset import COMPLETE, RunData
from rtvbench.analysis.load_figures import FIGURES, Achieved, LoadFigures
from rtvbench.loads import load as load_folders
from rtvbench.results import Measurement
from rtvbench.spec import LoadSpec

# Every load folder's achieved.py registers its kind's figures in FIGURES.
load_folders("achieved")
_GENERIC = LoadFigures()


def figures_of(kind: str) -> LoadFigures:
    return FIGURES.get(kind) or _GENERIC


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
    return out | figures_of(str(out["kind"])).from_windows(windows)


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
    figures = figures_of(kind)
    extra = {k: result[k] for k in figures.extra if k in result}
    extra |= {k: params[k] for k in figures.params_as_extra if k in params}
    return Achieved(
        load=name, kind=kind, achieved_percent=float(pct) if isinstance(pct, (int, float)) else None,
        per_cpu=per_cpu, pinned=pinned,
        workers=params.get("workers") or len({w.get("worker") for w in threads}) or None,
        bps=_num(result.get("achieved_bps")), ops_per_s=_num(result.get("achieved_ops_per_s")),
        extra=extra, params={k: params[k] for k in figures.params if k in params}, status=end.get("status"),
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
            elif key in figures_of(first.kind).maxed:
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


def describe(a: Achieved, quote: bool = True) -> str:
    """One phrase per load, the way an evaluation report would write it; a load that achieved nothing
    is said to have, so that no figure beside it passes for a figure under load."""
    text = figures_of(a.kind).describe(a, f"`{a.load}`" if quote else a.load)
    if a.nothing:
        text += " — it achieved nothing: the measurement ran without this load"
    return text


def no_record_words(kind: str | None) -> str:
    """What the report says of a measurement under a load of `kind` without a record of it."""
    return figures_of(kind or "").no_record


def definition_words(spec: LoadSpec) -> str:
    """What runs as a load of this definition and where, as the report's table of loads says it."""
    return figures_of(spec.kind or "").definition(spec)


def describe_all(achieved: list[Achieved], quote: bool = True) -> str:
    return "; ".join(describe(a, quote) for a in achieved)
