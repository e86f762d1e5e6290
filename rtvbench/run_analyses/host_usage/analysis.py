"""What the guests of a qemu environment cost the host during each measurement: the CPU share of
their vCPU threads and of QEMU's other threads (percent of one host CPU), how long the vCPUs waited for
a host CPU (the host-side view of what a guest would call steal), and QEMU's memory.

From the two samples the runner stores with a measurement of a qemu environment, right before and
right after the probe ran (cpu_stat phases `host_before` and `host_after`; see
rtvbench.targets.qemu.host_usage). The tick resolution is the host's USER_HZ (usually 100/s): one
tick is 1 % of one CPU over a one-second measurement. Memory is the after-sample's (QEMU's RSS and
PSS grow as the guest touches its RAM and seldom shrink), and beside it the guest's own view from its
/proc/meminfo at the same moment: used (MemTotal - MemAvailable) and available. The two differ by
design: memory a guest freed stays in its QEMU's RSS, and a guest's page cache is used to the host
but available to the guest.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from rtvbench.analysis.dataset import COMPLETE, RunData
from rtvbench.analysis.run_analysis import RUN_ANALYSES, RunAnalysis
from rtvbench.results import Measurement


@dataclass
class GuestUsage:
    guest: int                      # 1 = the measured guest, 2.. its neighbours
    vcpu_percent: float             # of one host CPU, all its vCPU threads together
    other_percent: float            # QEMU's other threads
    rss_mib: float | None
    pss_mib: float | None
    # runnable but kept off a host CPU (other work on the host): percent of the interval, all vCPUs
    vcpu_wait_percent: float | None = None
    # inside the guest, from its /proc/meminfo: MemTotal - MemAvailable, and MemAvailable
    guest_used_mib: float | None = None
    guest_available_mib: float | None = None

    @property
    def total_percent(self) -> float:
        return self.vcpu_percent + self.other_percent


def measurement_host_usage(m: Measurement) -> list[GuestUsage]:
    """Per guest that ran through the whole measurement (same QEMU process in both samples)."""
    before, after = m.host_samples
    if before is None or after is None or after.t - before.t <= 0:
        return []
    seconds, hz = after.t - before.t, after.clock_ticks

    def share(ticks: int) -> float:
        return 100.0 * ticks / hz / seconds

    first = {g.guest: g for g in before.guests}
    out = []
    for g in after.guests:
        b = first.get(g.guest)
        if b is None or b.pid != g.pid:
            continue        # booted (again) during the measurement: no interval to divide
        wait = (100.0 * (g.vcpu_wait_ns - b.vcpu_wait_ns) / 1e9 / seconds
                if g.vcpu_wait_ns is not None and b.vcpu_wait_ns is not None else None)
        # "Other" is QEMU's process total less its vCPU threads, two /proc files read a moment apart
        # and each rounded to whole ticks (the kernel scales a process's and a thread's times apart),
        # so the two samples' skews can differ by a tick or two: an idle QEMU then seems to have given
        # back CPU time (-1.2 %). A thread's CPU time never decreases, so a share below 0 is that skew.
        other = max(0, g.other_ticks - b.other_ticks)
        total, available = g.guest_mem_total_kib, g.guest_mem_available_kib
        inside = (total - available) / 1024 if total is not None and available is not None else None
        out.append(GuestUsage(g.guest, share(g.vcpu_ticks - b.vcpu_ticks), share(other),
                              g.rss_kib / 1024 if g.rss_kib is not None else None,
                              g.pss_kib / 1024 if g.pss_kib is not None else None, wait, inside,
                              available / 1024 if available is not None else None))
    return sorted(out, key=lambda u: u.guest)


def cell_host_usage(data: RunData, env: str, load: str, bench: str) -> list[GuestUsage]:
    """Per guest, the median over the cell's completed repetitions of each figure."""
    per_guest: dict[int, list[GuestUsage]] = {}
    for m in data.measurements(env, load, bench, COMPLETE):
        for u in measurement_host_usage(m):
            per_guest.setdefault(u.guest, []).append(u)

    def med(values):
        values = [v for v in values if v is not None]
        return statistics.median(values) if values else None

    return [GuestUsage(g, med([u.vcpu_percent for u in us]), med([u.other_percent for u in us]),
                       med([u.rss_mib for u in us]), med([u.pss_mib for u in us]),
                       med([u.vcpu_wait_percent for u in us]), med([u.guest_used_mib for u in us]),
                       med([u.guest_available_mib for u in us]))
            for g, us in sorted(per_guest.items())]


@dataclass(frozen=True)
class CellHostUsage:
    """What all the guests of one cell cost the host, against the first environment with guests
    measured under the same load and benchmark (the reference; its own difference is 0)."""
    guests: list[GuestUsage]
    reference_environment: str
    versus_reference_points: float      # this cell's total less the reference's, in percentage points

    @property
    def total_percent(self) -> float:
        return sum(g.total_percent for g in self.guests)

    @property
    def rss_mib(self) -> float:
        return sum(g.rss_mib or 0 for g in self.guests)

    @property
    def pss_mib(self) -> float:
        return sum(g.pss_mib or 0 for g in self.guests)

    @property
    def guest_used_mib(self) -> float | None:
        return _all_or_none([g.guest_used_mib for g in self.guests])

    @property
    def guest_available_mib(self) -> float | None:
        return _all_or_none([g.guest_available_mib for g in self.guests])


def _all_or_none(values: list[float | None]) -> float | None:
    """None unless every guest's figure is known: a total of some guests would pass for all of them."""
    return None if any(v is None for v in values) else sum(values)


def cells_host_usage(data: RunData, bench: str,
                     by_cell: dict[tuple[str, str, str], list[GuestUsage]]) -> dict[tuple[str, str], CellHostUsage]:
    """Per (environment, load) of `bench` with guests, in the order of its cells."""
    reference: dict[str, tuple[str, float]] = {}
    out = {}
    for env, load in data.cells(bench):
        guests = by_cell.get((env, load, bench), [])
        if not guests:
            continue
        total = sum(g.total_percent for g in guests)
        ref_env, ref_total = reference.setdefault(load, (env, total))
        out[(env, load)] = CellHostUsage(guests, ref_env, total - ref_total)
    return out


@dataclass(frozen=True)
class HostUsage:
    """What the guests cost the host: per measurement, and per cell (median over its completed
    repetitions), for the cells of qemu environments."""
    by_measurement: dict[int, list[GuestUsage]]
    by_cell: dict[tuple[str, str, str], list[GuestUsage]]     # (environment, load, benchmark)
    #: per benchmark, its cells with guests and their totals
    cells: dict[str, dict[tuple[str, str], CellHostUsage]]


def host_usage(data: RunData, around: object = None) -> HostUsage | None:
    """None when no measurement sampled the host (no qemu environment, or a run stored before)."""
    by_measurement = {m.id: u for m in data.run.measurements if (u := measurement_host_usage(m))}
    if not by_measurement:
        return None
    by_cell = {(env, load, bench): cell_host_usage(data, env, load, bench)
               for bench in data.benchmarks for env, load in data.cells(bench)}
    return HostUsage(by_measurement, by_cell, {bench: cells_host_usage(data, bench, by_cell) for bench in data.benchmarks})


HOST_USAGE: RunAnalysis[HostUsage] = RUN_ANALYSES.register("host_usage")(RunAnalysis("host_usage", host_usage))
