"""Which runner holds a run, and whether it is still alive.

A run is held by one runner at a time, named "host:pid:start" (start: the process's start time in
clock ticks since boot, so that a recycled pid is not taken for the old runner). The holder writes a
heartbeat into the run row every HEARTBEAT_S seconds. Another runner may take a run over when its
holder ran on this host and that process is gone (at once), or when the heartbeat is older than
HEARTBEAT_STALE_S (a holder on another host of a shared store, or one that hangs).
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

HEARTBEAT_S = 5.0
HEARTBEAT_STALE_S = 30.0


def _start_ticks(pid: int) -> str | None:
    """Field 22 of /proc/<pid>/stat (after the parenthesised command name, which may hold spaces)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rpartition(")")[2].split()[19]
    except (OSError, IndexError):
        return None


def this_runner() -> str:
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_start_ticks(pid) or 0}"


@dataclass(frozen=True)
class Holder:
    host: str
    pid: int
    start: str

    @classmethod
    def parse(cls, text: str) -> "Holder | None":
        parts = text.rsplit(":", 2)
        if len(parts) != 3 or not parts[1].isdigit():
            return None
        return cls(parts[0], int(parts[1]), parts[2])

    def words(self) -> str:
        return f"process {self.pid} on {self.host}"


def holder_alive(holder_text: str, heartbeat_at: datetime | None) -> Holder | None:
    """The holder of a run when it may still be running it, else None (the run may be taken)."""
    holder = Holder.parse(holder_text)
    if holder is None:
        return None
    if holder.host == socket.gethostname():
        # On this machine the process table says it for sure, heartbeat or not.
        return holder if _start_ticks(holder.pid) == holder.start else None
    if heartbeat_at is None:
        return None
    if heartbeat_at.tzinfo is None:
        heartbeat_at = heartbeat_at.replace(tzinfo=timezone.utc)
    fresh = datetime.now(timezone.utc) - heartbeat_at < timedelta(seconds=HEARTBEAT_STALE_S)
    return holder if fresh else None
