"""The records the host reads beyond a kind's results, typed: the probe's `meta.privileges`, its
latency `window` records, the samples taken beside a measurement (what a
qemu environment's guests cost the host; thermal, frequency and throttling state) and the runner's
health checks of a soak.

The store keeps every record verbatim (its JSON); each is decoded here once, so that no analysis
indexes a record's dict. A field a record lacks, or holds with the wrong type, decodes as None (a
record of an older probe, or a truncated one): decoding never raises.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any


def as_int(v: Any) -> int | None:
    """An integer field of a record, else None (a bool is not one)."""
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _flag(v: Any) -> bool | None:
    return v if isinstance(v, bool) else None


def as_number(v: Any) -> float | int | None:
    """A numeric field of a record, else None."""
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def as_text(v: Any) -> str | None:
    """A text field of a record, else None."""
    return v if isinstance(v, str) else None


@dataclass(frozen=True)
class Privileges:
    """A probe run's `meta.privileges`, decoded once: who it ran as and what it was granted of what
    it asked for (None: not asked, or not said)."""

    euid: int | None = None
    rt_granted: bool | None = None      # the real-time policy of its measuring threads
    mlockall: bool | None = None

    @classmethod
    def of(cls, meta: dict[str, Any] | None) -> Privileges:
        p = (meta or {}).get("privileges")
        if not isinstance(p, dict):
            return cls()
        rt = _flag(p.get("rt_granted"))
        params = (meta or {}).get("params")
        asked = params.get("policy") if isinstance(params, dict) else None
        if rt is False and isinstance(asked, str) and asked not in ("fifo", "rr"):
            rt = None           # a run at a normal policy asked for no real-time priority to be refused
        return cls(as_int(p.get("euid")), rt, _flag(p.get("mlockall")))


#: a window record's fields that are not figures of the window
_WINDOW_FIELDS = ("type", "index", "cpu", "t_start_ns", "t_end_ns", "missed")


@dataclass(frozen=True)
class Window:
    """One CPU's `window` record (docs/probe-output.md): what it measured over one window."""

    index: int | None
    cpu: int | str | None
    t_start_ns: int | None               # since the measurement started
    t_end_ns: int | None
    missed: int                          # periods missed in the window
    #: the window's figures by name: count, min_ns, max_ns, p99_ns, response_max_ns ... (numbers only)
    values: dict[str, float]

    @property
    def length_ns(self) -> int | None:
        if self.t_start_ns is None or self.t_end_ns is None:
            return None
        return self.t_end_ns - self.t_start_ns

    @classmethod
    def of(cls, r: dict[str, Any]) -> Window:
        cpu = r.get("cpu")
        return cls(as_int(r.get("index")), cpu if isinstance(cpu, (int, str)) and not isinstance(cpu, bool) else None,
                   as_int(r.get("t_start_ns")), as_int(r.get("t_end_ns")), as_int(r.get("missed")) or 0,
                   {k: v for k, v in r.items() if k not in _WINDOW_FIELDS and as_number(v) is not None})


@dataclass(frozen=True)
class GuestProcess:
    """A guest's QEMU process in a health check."""

    guest: int | None                    # 1 = the measured guest, 2.. its neighbours
    pid: int | None
    rss_kib: int | None
    pss_kib: int | None


@dataclass(frozen=True)
class HealthCheck:
    """One health check of an environment during a soak, or a soak's event in its series (the
    environment was found lost, or was brought back)."""

    environment: str
    when: datetime | None
    event: str | None                    # "lost" | "recovered"; None for a check
    probe_ok: bool                       # its probe answered (a check)
    error: str | None                    # why it did not, or why the environment was lost
    mem_used_kib: int | None             # MemTotal - MemAvailable
    qemu: tuple[GuestProcess, ...]       # every guest's QEMU of a qemu environment

    @classmethod
    def of(cls, environment: str, when: datetime | None, d: dict[str, Any]) -> HealthCheck:
        guests = d.get("qemu") if isinstance(d.get("qemu"), list) else []
        return cls(environment, when, as_text(d.get("event")), d.get("probe_ok") is True, as_text(d.get("error")),
                   as_int(d.get("mem_used_kib")),
                   tuple(GuestProcess(as_int(g.get("guest")), as_int(g.get("pid")), as_int(g.get("rss_kib")),
                                      as_int(g.get("pss_kib"))) for g in guests if isinstance(g, dict)))


def _counters(v: Any) -> dict[str, int]:
    """name -> integer value, of a sample's object of counters (temperatures, frequencies ...)."""
    return {str(k): x for k, x in v.items() if as_int(x) is not None} if isinstance(v, dict) else {}


@dataclass(frozen=True)
class GuestSample:
    """One guest's QEMU process in a host sample: CPU ticks of its vCPU threads and of its other
    threads, how long the vCPUs waited for a host CPU, its memory; and the guest's memory as its own
    kernel counts it."""

    guest: int
    pid: int | None
    vcpu_ticks: int                      # user + system
    other_ticks: int
    vcpu_wait_ns: int | None
    rss_kib: int | None
    pss_kib: int | None
    # the guest's own /proc/meminfo (a run stored before it was read has None)
    guest_mem_total_kib: int | None = None
    guest_mem_available_kib: int | None = None

    @classmethod
    def of(cls, g: Any) -> GuestSample | None:
        """None for an entry without its guest number or its CPU time (nothing to divide)."""
        if not isinstance(g, dict) or as_int(g.get("guest")) is None:
            return None
        ticks = [_counters(g.get(part)) for part in ("vcpu", "other")]
        if any(not {"user", "system"} <= t.keys() for t in ticks):
            return None
        vcpu, other = (t["user"] + t["system"] for t in ticks)
        return cls(g["guest"], as_int(g.get("pid")), vcpu, other, as_int(g.get("vcpu_wait_ns")),
                   as_int(g.get("rss_kib")), as_int(g.get("pss_kib")), as_int(g.get("guest_mem_total_kib")),
                   as_int(g.get("guest_mem_available_kib")))


@dataclass(frozen=True)
class HostSample:
    """What a qemu environment's guests had used of the host at one moment (taken right before and
    right after the probe ran: cpu_stat rows `host_before`, `host_after`)."""

    t: float                             # host monotonic seconds
    clock_ticks: int                     # the host's ticks per second (USER_HZ)
    guests: tuple[GuestSample, ...]

    @classmethod
    def of(cls, row: Any) -> HostSample | None:
        if not isinstance(row, dict) or as_number(row.get("t")) is None:
            return None
        guests = row.get("guests") if isinstance(row.get("guests"), list) else []
        return cls(row["t"], as_int(row.get("clock_ticks")) or 100,
                   tuple(g for g in map(GuestSample.of, guests) if g is not None))


@dataclass(frozen=True)
class Trip:
    type: str                            # passive, hot, critical, active ...
    temp_mC: int


@dataclass(frozen=True)
class ThermalSample:
    """One sample of the thermal sampler (`rtvb-probe sample`): each zone's temperature, each CPU's
    frequency, the throttle counters and the cooling devices' states. The first sample of a
    measurement also names the zones (type, trip points) and the cooling devices (type)."""

    seq: int | None
    temp_mC: dict[str, int]
    freq_khz: dict[str, int]
    throttle: dict[str, int]
    cooling: dict[str, int]
    zone_types: dict[str, str]
    zone_trips: dict[str, tuple[Trip, ...]]
    cooling_types: dict[str, str]

    @classmethod
    def of(cls, r: Any) -> ThermalSample | None:
        if not isinstance(r, dict):
            return None
        zones = {str(k): z for k, z in r["zones"].items() if isinstance(z, dict)} \
            if isinstance(r.get("zones"), dict) else {}
        devices = {str(k): d for k, d in r["cooling_devices"].items() if isinstance(d, dict)} \
            if isinstance(r.get("cooling_devices"), dict) else {}
        trips = {name: tuple(Trip(t["type"], t["temp_mC"]) for t in (z.get("trips") or []) if isinstance(t, dict)
                             and isinstance(t.get("type"), str) and as_int(t.get("temp_mC")) is not None)
                 for name, z in zones.items() if isinstance(z.get("trips") or [], list)}
        return cls(as_int(r.get("seq")), _counters(r.get("temp_mC")), _counters(r.get("freq_khz")),
                   _counters(r.get("throttle")), _counters(r.get("cooling")),
                   {name: z["type"] for name, z in zones.items() if isinstance(z.get("type"), str)}, trips,
                   {name: d["type"] for name, d in devices.items() if isinstance(d.get("type"), str)})


@dataclass(frozen=True)
class ProbeEnd:
    """The probe's `end` record: how its run ended, its wall and CPU time."""

    status: str | None                   # ok | interrupted | error
    elapsed_ns: int | None
    cpu_time_ns: int | None              # user + system of the whole probe process

    @classmethod
    def of(cls, r: Any) -> ProbeEnd | None:
        if not isinstance(r, dict):
            return None
        return cls(as_text(r.get("status")), as_int(r.get("elapsed_ns")), as_int(r.get("cpu_time_ns")))


def load_average(row: Any) -> float | None:
    """The 1-minute load average of a /proc/loadavg sample (cpu_stat row `loadavg_after`)."""
    return as_number(row.get("1")) if isinstance(row, dict) else None
