"""The report's table of what the guests of qemu environments cost the host, in each benchmark's
section, and each measurement's figures in the JSON."""

from __future__ import annotations

from typing import Any

from rtvbench.analysis.evaluation import Evaluation
from rtvbench.report.run_section import RUN_SECTIONS, RunSection
from rtvbench.report.tables import Row, Table
from rtvbench.results import Measurement
from rtvbench.run_analyses.host_usage.analysis import HOST_USAGE, GuestUsage, HostUsage


def host_usage_tables(ev: Evaluation, part: HostUsage, bench: str) -> list[Table]:
    """What the guests of qemu environments cost the host, per cell and guest, and each cell's total
    against the first environment with guests under the same load, in percentage points."""
    cells = part.cells.get(bench, {})
    if not cells:
        return []
    rows = []
    for (env, load), cell in cells.items():
        versus = ("reference" if cell.reference_environment == env
                  else f"{cell.versus_reference_points:+.1f} vs {cell.reference_environment}")
        for g in cell.guests:
            rows.append(Row([env, load, str(g.guest), f"{g.vcpu_percent:.1f}",
                             "–" if g.vcpu_wait_percent is None else f"{g.vcpu_wait_percent:.1f}",
                             f"{g.other_percent:.1f}",
                             f"{g.total_percent:.1f}", "–" if g.rss_mib is None else f"{g.rss_mib:.0f}",
                             "–" if g.pss_mib is None else f"{g.pss_mib:.0f}", _mib(g.guest_used_mib),
                             _mib(g.guest_available_mib), "", ""]))
        rows.append(Row([env, load, "all", "", "", "", f"{cell.total_percent:.1f}", f"{cell.rss_mib:.0f}",
                         f"{cell.pss_mib:.0f}", _mib(cell.guest_used_mib), _mib(cell.guest_available_mib),
                         str(len(cell.guests)), versus], "summary"))
    return [Table(
        f"{bench}: what the guests cost the host (QEMU's threads, seen from the host)",
        ["Environment", "Load", "Guest", "vCPU threads %", "vCPU waiting %", "QEMU other %", "Total %", "RSS MiB",
         "PSS MiB", "Used in guest MiB", "Available in guest MiB", "Guests", "Total, B - A (points)"], rows,
        numeric_from=3, numeric_to=12,
        note="Percent of one host CPU over the probe's run (median over the completed repetitions), from the "
             "CPU time of each QEMU process's vCPU threads and of its other threads (device emulation, I/O, "
             "worker threads) between a sample right before and one right after the probe ran; vCPU waiting: the "
             "time the vCPU threads were ready to run but waited for a host CPU (schedstat), the host-side "
             "view of steal; memory from "
             "QEMU's smaps_rollup at the end (PSS splits shared pages between the guests), and beside it each "
             "guest's own /proc/meminfo at the same moment (used: MemTotal - MemAvailable; memory a guest "
             "freed stays in QEMU's RSS, and its page cache is used to the host but available to the guest; "
             "– where the guest could not be read). Under TCG a vCPU "
             "thread runs the emulator: a busy vCPU is a busy host CPU, an idle one sleeps. The last column "
             "is the difference of the cells' totals against the first environment with guests under the "
             "same load.")]


def _guest_json(u: GuestUsage) -> dict[str, Any]:
    return {"guest": u.guest, "vcpu_percent": u.vcpu_percent, "vcpu_wait_percent": u.vcpu_wait_percent,
            "other_percent": u.other_percent, "rss_mib": u.rss_mib, "pss_mib": u.pss_mib,
            "guest_used_mib": u.guest_used_mib, "guest_available_mib": u.guest_available_mib}


def measurement_json(ev: Evaluation, part: HostUsage | None, m: Measurement) -> dict[str, Any]:
    # percent of one host CPU, MiB; [] outside a qemu environment
    usage = part.by_measurement.get(m.id, []) if part is not None else []
    return {"host_usage": [_guest_json(u) for u in usage]}


def run_json(ev: Evaluation, part: HostUsage | None) -> dict[str, Any]:
    """Each cell's row of the table: its guests' medians, their totals and the difference to the reference."""
    cells = part.cells if part is not None else {}
    return {"host_usage_cells": [
        {"benchmark": bench, "environment": env, "load": load,
         "guests": [_guest_json(g) | {"total_percent": g.total_percent} for g in cell.guests],
         "total_percent": cell.total_percent, "rss_mib": cell.rss_mib, "pss_mib": cell.pss_mib,
         "guest_used_mib": cell.guest_used_mib, "guest_available_mib": cell.guest_available_mib,
         "reference_environment": cell.reference_environment,
         "versus_reference_points": cell.versus_reference_points}
        for bench, by_cell in cells.items() for (env, load), cell in by_cell.items()]}


def csv_rows(ev: Evaluation, part: HostUsage | None, m: Measurement) -> list[tuple[str, float, str]]:
    """The same figures as the measurement's JSON entry, `host_usage.guest<N>.<figure>`."""
    usage = part.by_measurement.get(m.id, []) if part is not None else []
    rows = []
    for u in usage:
        for name, value, unit in (("vcpu_percent", u.vcpu_percent, "percent"),
                                  ("vcpu_wait_percent", u.vcpu_wait_percent, "percent"),
                                  ("other_percent", u.other_percent, "percent"), ("rss_mib", u.rss_mib, "MiB"),
                                  ("pss_mib", u.pss_mib, "MiB"), ("guest_used_mib", u.guest_used_mib, "MiB"),
                                  ("guest_available_mib", u.guest_available_mib, "MiB")):
            if value is not None:
                rows.append((f"host_usage.guest{u.guest}.{name}", value, unit))
    return rows


def _mib(value: float | None) -> str:
    return "–" if value is None else f"{value:.0f}"


RUN_SECTIONS.register("host_usage")(RunSection(HOST_USAGE, bench_tables=host_usage_tables,
                                               measurement_json=measurement_json, json=run_json,
                                               csv_rows=csv_rows))
