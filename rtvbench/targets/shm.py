"""Shared-memory regions between environments, for the `ipc` benchmark's transport "shm".

A region is a file in /dev/shm on the machine rtvbench runs on. A qemu environment with
`shm = "NAME"` gets it as an ivshmem-plain PCI device (QEMU maps the file, share=on; the probe in
the guest maps the device's BAR2); qemu environments that name the same region share it, and a
local environment reaches any of them by mapping the file itself. Two local environments, or a
local environment's own round trips, use a file the server creates for one measurement.
docs/targets/qemu.md, docs/campaign.md.
"""

from __future__ import annotations

import atexit
import os
from pathlib import Path
from typing import Protocol

from rtvbench.errors import TargetError


class Target(Protocol):
    """What this module needs of a target (rtvbench.targets.base.Target, which imports this)."""

    name: str
    kind: str

    def shm_region(self) -> str | None: ...

SHM_DIR = Path("/dev/shm")
#: the probe's option naming a guest's region: its only ivshmem device
PCI_ARGS = ["--shm-pci", "auto"]

#: the probe's region header (shm.c): 8 lines of 64 bytes before the two message slots
HEADER_BYTES, LINE_BYTES = 512, 64

_held: dict[Path, int] = {}         # region file -> environments holding it


def capacity(region_bytes: int) -> int:
    """The largest message a region of this size carries each way (rtvb-probe's shm_capacity)."""
    return max(0, (region_bytes - HEADER_BYTES) // 2 // LINE_BYTES * LINE_BYTES)


def region_path(name: str) -> Path:
    """The file behind region `name` for this rtvbench process (the pid: two runs never share)."""
    return SHM_DIR / f"rtvb-{os.getpid()}-{name}"


def hold(name: str, size: int) -> Path:
    """Create region `name` of `size` bytes (zeroed) unless an environment holds it already; its path."""
    path = region_path(name)
    if _held.get(path, 0) == 0:
        try:
            with open(path, "wb") as f:
                f.truncate(size)
        except OSError as e:
            raise TargetError(f"cannot create the shm region file {path} ({e.strerror}); is /dev/shm a "
                              "writable tmpfs?") from None
    _held[path] = _held.get(path, 0) + 1
    return path


def release(name: str) -> None:
    """An environment lets go of region `name`; the last one removes its file."""
    path = region_path(name)
    if _held.get(path, 0) > 0:
        _held[path] -= 1
        if _held[path] == 0:
            del _held[path]
            path.unlink(missing_ok=True)


@atexit.register
def _remove_all() -> None:
    # An exit that skips the targets' close() still leaves no region file behind.
    for path in list(_held):
        path.unlink(missing_ok=True)
    _held.clear()


def problem(measured: Target, peer: Target) -> str | None:
    """Why `measured` cannot reach a shm server in `peer`, or None."""
    kinds = {measured.kind, peer.kind}
    if kinds <= {"local", "qemu"}:
        if measured is peer or "local" in kinds:
            guest = next((t for t in (measured, peer) if t.kind == "qemu"), None)
            if guest is None or guest.shm_region() is not None:
                return None
        elif measured.shm_region() is not None and measured.shm_region() == peer.shm_region():
            return None
    return (f"environments {measured.name} and {peer.name} share no shm region; give the qemu environments "
            'that exchange shm messages the same `shm = "NAME"` (a local environment maps the file of a '
            "qemu one), or use tcp")


def probe_args(measured: Target, peer: Target, local_file: Path,
               local_bytes: int) -> tuple[list[str], list[str]]:
    """The region options of the client (in `measured`) and of the server (in `peer`). `local_file`:
    the file of `local_bytes` a local server creates (and removes) when neither end is a guest.
    Raises TargetError."""
    why = problem(measured, peer)
    if why:
        raise TargetError(why + ".")
    guests = [t for t in (measured, peer) if t.kind == "qemu"]
    if not guests:
        return (["--shm-path", str(local_file)],
                ["--shm-path", str(local_file), "--shm-size", str(local_bytes)])
    host_file = str(region_path(guests[0].shm_region()))

    def args(t: Target) -> list[str]:
        return PCI_ARGS if t.kind == "qemu" else ["--shm-path", host_file]
    return args(measured), args(peer)
