"""What the store hands to analysis and report: one campaign run, as plain data.

This module is the seam between the stages that produce data (runner, store)
and the stages that interpret it (analysis, report). Nothing here touches a
database or a target; analysis and report never import the store.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from datetime import datetime
from typing import Any

from rtvbench.spec import CampaignSpec

# The records' types (rtvbench.records) are imported by the properties that decode them, whose
# docstrings name them: `show` reads none, and their dataclasses were about 3 ms of its start.

@dataclass
class Measurement:
    """One execution of one benchmark, in one environment, under one load."""

    id: int
    environment: str
    load: str
    benchmark: str
    kind: str                       # benchmark kind (rtvbench/kinds/<kind>/)
    repetition: int                 # 0-based
    status: str                     # "ok" | "interrupted" | "error" | "running"
    command: list[str]              # exact probe argv, to reproduce it
    load_commands: list[str]        # what generated the load (empty when idle)
    started_at: datetime | None
    finished_at: datetime | None
    meta: dict[str, Any] | None     # the probe's meta record
    results: list[dict[str, Any]]   # the probe's result records, verbatim
    windows: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None        # why it failed, when status == "error"
    target_log: str | None = None   # the target's own log when it went away (a guest's console)
    attempt: int = 1                # 1 + how many times it was started before (retries, --resume)
    # Records of each probe load generator that ran during the measurement, keyed by the load's
    # name (the parts of a combined load each under their own name): meta, window, result, end.
    load_records: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # /proc/stat of the measured environment right before ("before") and right after ("after")
    # the probe ran: CPU line name ("cpu" = all, "cpu0" ...) -> field ("user", "steal" ...) -> ticks.
    # Empty when the target could not be read.
    cpu_stat: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    end: dict[str, Any] | None = None   # the probe's end record (elapsed and CPU time), when it printed one
    # The kernel traces the probe saved around wake-ups over its trace threshold (latency
    # --trace-threshold-us): `trace` records, verbatim.
    traces: list[dict[str, Any]] = field(default_factory=list)

    @property
    def privileges(self) -> Any:
        """`meta.privileges`, typed (records.Privileges)."""
        from rtvbench.records import Privileges
        return Privileges.of(self.meta)

    @cached_property
    def window_records(self) -> list:
        """`windows`, typed (records.Window)."""
        from rtvbench.records import Window
        return [Window.of(w) for w in self.windows]

    @cached_property
    def probe_end(self) -> Any:
        """`end`, typed (records.ProbeEnd); None when the probe printed none."""
        from rtvbench.records import ProbeEnd
        return ProbeEnd.of(self.end)

    @cached_property
    def peer_server_end(self) -> Any:
        """The `end` record (records.ProbeEnd) of the round-trip server rtvbench ran in the measured
        environment beside the probe (a benchmark's `peer` is that environment), with its `pid`; None
        otherwise."""
        from rtvbench.records import ProbeEnd
        return ProbeEnd.of((self.cpu_stat or {}).get("peer_server"))

    @cached_property
    def peer_server_pid(self) -> int | None:
        from rtvbench.records import as_int
        row = (self.cpu_stat or {}).get("peer_server")
        return as_int(row.get("pid")) if isinstance(row, dict) else None

    @cached_property
    def load_average_after(self) -> float | None:
        """The target's 1-minute load average right after the probe ended, when it was read."""
        from rtvbench.records import load_average
        return load_average((self.cpu_stat or {}).get("loadavg_after"))

    @cached_property
    def host_samples(self) -> tuple:
        """What a qemu environment's guests had used of the host right before and right after the
        probe ran (records.HostSample); None each when not sampled (another target, an older run)."""
        from rtvbench.records import HostSample
        stat = self.cpu_stat or {}
        return HostSample.of(stat.get("host_before")), HostSample.of(stat.get("host_after"))

    @cached_property
    def thermal_samples(self) -> list:
        """The thermal sampler's samples (records.ThermalSample) beside the measurement, in order; []
        when none ran."""
        from rtvbench.records import ThermalSample
        row = (self.cpu_stat or {}).get("thermal")
        samples = row.get("samples") if isinstance(row, dict) else None
        return [t for t in map(ThermalSample.of, samples) if t is not None] if isinstance(samples, list) else []

    def result(self, cpu: Any = "all") -> dict[str, Any] | None:
        """The result record for a CPU ("all" = merged), or None."""
        for r in self.results:
            if r.get("cpu") == cpu:
                return r
        return None


@dataclass
class CampaignRun:
    """Everything known about one run of a campaign file."""

    id: int
    campaign_name: str
    campaign_text: str              # the TOML file as it was run
    campaign: dict[str, Any]        # the parsed TOML (environments, loads, benchmarks, requirements ...)
    status: str                     # "running" | "finished" | "interrupted"
    started_at: datetime | None
    finished_at: datetime | None
    fingerprints: dict[str, dict[str, Any]]   # environment name -> probe sysinfo record
    measurements: list[Measurement]
    # environment name -> its Target.describe() (target kind, accel ...), and the probe's `meta`
    # record of that sysinfo run (privileges: euid): the rest of each environment's fingerprint.
    targets: dict[str, dict[str, Any]] = field(default_factory=dict)
    fingerprint_meta: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Earlier attempts of measurements that were retried or resumed and had failed (e.g. a guest
    # crash: `target_log` holds its console), without their records; the latest attempt of every
    # measurement is in `measurements`.
    failed_attempts: list[Measurement] = field(default_factory=list)
    # The campaign as validated, every default filled in (rtvbench.spec): what analysis, preflight
    # and report read. Runs stored before specs were get theirs built from campaign_text
    # (rtvbench.campaign.reader.stored_spec); None only when that text cannot be read at all.
    spec: CampaignSpec | None = None
    tags: dict[str, str] = field(default_factory=dict)   # `run --tag key=value`
    note: str | None = None                                # `run --note TEXT`
    # `rtvbench soak`: every health check and soak event (records.HealthCheck), in order
    health: list = field(default_factory=list)
