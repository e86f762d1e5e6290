"""The records the host reads beyond a kind's results, typed: the probe's `meta.privileges`, its
latency `window` records, a disrupt load's events, and the runner's health checks of a soak.

The store keeps every record verbatim (its JSON); each is decoded here once, so that no analysis
indexes a record's dict. A field a record lacks, or holds with the wrong type, decodes as None (a
record of an older probe, or a truncated one): decoding never raises.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _flag(v: Any) -> bool | None:
    return v if isinstance(v, bool) else None


def _num(v: Any) -> float | int | None:
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _text(v: Any) -> str | None:
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
        return cls(_int(p.get("euid")), rt, _flag(p.get("mlockall")))


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
        return cls(_int(r.get("index")), cpu if isinstance(cpu, (int, str)) and not isinstance(cpu, bool) else None,
                   _int(r.get("t_start_ns")), _int(r.get("t_end_ns")), _int(r.get("missed")) or 0,
                   {k: v for k, v in r.items() if k not in _WINDOW_FIELDS and _num(v) is not None})


@dataclass(frozen=True)
class DisruptEvent:
    """One event of a disrupt load (a neighbour guest rebooted, or killed and booted again): its
    `window` record of kind `disrupt`, timed from the load's start."""

    index: int
    t_start_ns: int
    t_end_ns: int
    action: str                          # what was done to the guest; "?" when not said
    boot_ns: float | None                # the guest's boot, QEMU start to its probe's ready

    @classmethod
    def of(cls, r: dict[str, Any]) -> DisruptEvent | None:
        """The event of a load record; None for any other record."""
        if r.get("type") != "window" or r.get("kind") != "disrupt":
            return None
        return cls(_int(r.get("index")) or 0, _int(r.get("t_start_ns")) or 0, _int(r.get("t_end_ns")) or 0,
                   _text(r.get("action")) or "?", _num(r.get("boot_ns")))


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
        return cls(environment, when, _text(d.get("event")), d.get("probe_ok") is True, _text(d.get("error")),
                   _int(d.get("mem_used_kib")),
                   tuple(GuestProcess(_int(g.get("guest")), _int(g.get("pid")), _int(g.get("rss_kib")),
                                      _int(g.get("pss_kib"))) for g in guests if isinstance(g, dict)))
