"""CPU usage during a measurement, from the /proc/stat snapshots taken right before and right
after the probe ran ("CPU usage = 100 - idle ratio" over the
difference of two `cat /proc/stat`).

Each state's share is its tick difference over the sum of all states' differences, per CPU
and for the `cpu` line (all CPUs). Busy is everything but `idle` and `iowait` (as top and
mpstat count it: iowait is idle time with I/O outstanding). `steal` is kept apart: in a guest
it is time the hypervisor ran something else on this vCPU, the first sign of a noisy neighbour.
The resolution is one tick (USER_HZ, usually 10 ms) per CPU: about 1 % of a one-second
measurement. The kernel charges a whole tick to whatever runs when the tick fires, so a
periodic task whose period is locked to the tick (a 1 kHz loop on a 250 Hz kernel) is seen
either at almost every tick or at none: its CPU may read near 100 % or near 0 % busy. A load
running flat out, the case this accounting is for, is seen as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rtvbench.analysis.dataset import COMPLETE, RunData
from rtvbench.procstat import cpu_deltas
from rtvbench.results import Measurement

#: states shown, in the report's column order; `guest`/`guest_nice` are inside user/nice already
STATES = ("user", "nice", "system", "irq", "softirq", "steal", "iowait", "idle")
IDLE_STATES = ("idle", "iowait")


@dataclass
class CpuUsage:
    cpu: str                            # "all", or the CPU number as text ("0", "1" ...)
    percent: dict[str, float]           # state -> % of the interval
    ticks: int                          # ticks of the interval (summed over repetitions for a cell)
    n: int = 1                          # measurements averaged
    busy_values: list[float] = field(default_factory=list)   # busy % of each measurement

    @property
    def busy(self) -> float:
        return 100.0 - sum(self.percent.get(s, 0.0) for s in IDLE_STATES)

    @property
    def label(self) -> str:
        return "all CPUs" if self.cpu == "all" else f"CPU {self.cpu}"


def _cpu_key(name: str) -> tuple[int, int]:
    return (-1, 0) if name == "all" else (0, int(name)) if name.isdigit() else (1, 0)


def measurement_usage(m: Measurement) -> list[CpuUsage]:
    """Usage per CPU ("all" first) over the probe's run; empty without both snapshots."""
    before, after = (m.cpu_stat or {}).get("before"), (m.cpu_stat or {}).get("after")
    if not isinstance(before, dict) or not isinstance(after, dict):
        return []
    out = []
    for line, delta in cpu_deltas(before, after).items():
        total = sum(delta.values())
        cpu = "all" if line == "cpu" else line[3:]
        u = CpuUsage(cpu, {s: 100.0 * d / total for s, d in delta.items()}, total)
        u.busy_values = [u.busy]
        out.append(u)
    return sorted(out, key=lambda u: _cpu_key(u.cpu))


def mean_usage(usages: list[list[CpuUsage]]) -> list[CpuUsage]:
    """The mean share of each state per CPU over several measurements."""
    by_cpu: dict[str, list[CpuUsage]] = {}
    for per_measurement in usages:
        for u in per_measurement:
            by_cpu.setdefault(u.cpu, []).append(u)
    out = []
    for cpu, us in by_cpu.items():
        percent = {s: sum(u.percent[s] for u in us) / len(us) for s in STATES}
        out.append(CpuUsage(cpu, percent, sum(u.ticks for u in us), len(us), [u.busy for u in us]))
    return sorted(out, key=lambda u: _cpu_key(u.cpu))


def cell_usage(data: RunData, env: str, load: str, bench: str) -> list[CpuUsage]:
    """Mean usage per CPU over the completed repetitions of a cell."""
    return mean_usage([measurement_usage(m) for m in data.measurements(env, load, bench, COMPLETE)])


@dataclass(frozen=True)
class BusyDifference:
    """All CPUs' busy % of a cell (or one measurement) less that of the same load's cell in the
    baseline environment (its mean over the completed repetitions): B - A in percentage points, so that
    what a guest costs beside the native run reads as one number."""
    baseline: str                       # the baseline environment
    baseline_busy: float
    points: float                       # B - A, percentage points


def busy_difference(usage: list[CpuUsage], baseline: str, baseline_usage: list[CpuUsage]) -> BusyDifference | None:
    """`usage` against `baseline_usage` (the baseline environment's cell), over all CPUs; None when
    either was not recorded."""
    this = next((u for u in usage if u.cpu == "all"), None)
    base = next((u for u in baseline_usage if u.cpu == "all"), None)
    if this is None or base is None:
        return None
    return BusyDifference(baseline, base.busy, this.busy - base.busy)


def busy_text(usage: list[CpuUsage]) -> str:
    """"all CPUs 54 % busy (CPU 0: 9 %, CPU 1: 99 %)", steal named when there is any."""
    if not usage:
        return ""
    total = next((u for u in usage if u.cpu == "all"), None)
    per = [u for u in usage if u.cpu != "all"]
    text = f"{total.busy:.0f} % busy over all CPUs" if total else ""
    if per:
        text += (" (" if text else "") + ", ".join(f"{u.label}: {u.busy:.0f} %" for u in per) + (")" if text else "")
    steal = total.percent.get("steal", 0.0) if total else 0.0
    if steal >= 0.5:
        text += f", {steal:.1f} % stolen by the hypervisor"
    return text
