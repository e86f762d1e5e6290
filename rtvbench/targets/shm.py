"""Shared-memory regions between environments, for the `ipc` benchmark's transport "shm".

A region is a file in /dev/shm on the machine rtvbench runs on. A qemu environment with
`shm = "NAME"` gets it as an ivshmem-plain PCI device (QEMU maps the file, share=on; the probe in
the guest maps the device's BAR2); qemu environments that name the same region share it, and a
local environment reaches any of them by mapping the file itself. Two local environments, or a
local environment's own round trips, use a file the server creates for one measurement.

/dev/shm is writable by every user: region files are made as run_files.py says (exclusive, never
through a symlink, 0600, a random name after rtvbench's pid), and a killed run's are swept.
docs/targets/qemu.md, docs/campaign.md.
"""

from __future__ import annotations

import atexit
import os
from pathlib import Path
from typing import Protocol

from rtvbench import run_files
from rtvbench.errors import TargetError
from rtvbench.targets.capabilities import ProbeSubset


class Target(Protocol):
    """What this module needs of a target (rtvbench.targets.base.Target, which imports this)."""

    name: str
    kind: str

    def shm_region(self) -> str | None: ...

SHM_DIR = run_files.SHM_DIR
#: the probe's option naming a guest's region: its only ivshmem device
PCI_ARGS = ["--shm-pci", "auto"]

#: the probe's region header (shm.c): 8 lines of 64 bytes before the two message slots
HEADER_BYTES, LINE_BYTES = 512, 64

_held: dict[str, tuple[Path, int]] = {}     # region name -> its file, environments holding it


def capacity(region_bytes: int) -> int:
    """The largest message a region of this size carries each way (rtvb-probe's shm_capacity)."""
    return max(0, (region_bytes - HEADER_BYTES) // 2 // LINE_BYTES * LINE_BYTES)


def region_path(name: str) -> Path:
    """The file of region `name`, which an environment holds. Raises TargetError."""
    if name not in _held:
        raise TargetError(f"shm region {name!r} is not set up: no environment naming it has started.")
    return _held[name][0]


def local_file(tail: str) -> Path:
    """A name for the region a local shm server creates for one measurement (the probe creates it
    exclusively and refuses a name somebody planted)."""
    return SHM_DIR / run_files.fresh_name(run_files.REGION_PREFIX, tail)


def hold(name: str, size: int) -> Path:
    """Create region `name` of `size` bytes (zeroed) unless an environment holds it already; its path.
    The file is this user's alone (0600): QEMU, which maps it, and a local probe run as this user."""
    if name in _held:
        path, users = _held[name]
        _held[name] = (path, users + 1)
        return path
    try:
        path, fd = run_files.create_file(SHM_DIR, run_files.REGION_PREFIX, name)
    except OSError as e:
        raise TargetError(f"cannot create the shm region file for region {name!r} in {SHM_DIR} "
                          f"({e.strerror}); is /dev/shm a writable tmpfs?") from None
    try:
        os.ftruncate(fd, size)
    except OSError as e:
        path.unlink(missing_ok=True)
        raise TargetError(f"cannot size the shm region file {path} to {size} bytes ({e.strerror}); "
                          "give the region fewer MiB (shm_size_mb) or free memory in /dev/shm.") from None
    finally:
        os.close(fd)
    _held[name] = (path, 1)
    return path


def release(name: str) -> None:
    """An environment lets go of region `name`; the last one removes its file."""
    if name in _held:
        path, users = _held[name]
        if users > 1:
            _held[name] = (path, users - 1)
        else:
            del _held[name]
            path.unlink(missing_ok=True)


@atexit.register
def _remove_all() -> None:
    # An exit that skips the targets' close() still leaves no region file behind.
    for path, _ in list(_held.values()):
        path.unlink(missing_ok=True)
    _held.clear()


def check(measured: Target, peer: Target) -> None:
    """Raises TargetError when `measured` cannot reach a shm server in `peer`."""
    why = problem(measured, peer)
    if why:
        raise TargetError(why + ".")


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
    # A bare-metal image has no other transport to fall back on.
    alone = isinstance(measured, ProbeSubset) or isinstance(peer, ProbeSubset)
    return (f"environments {measured.name} and {peer.name} share no shm region; give the qemu environments "
            'that exchange shm messages the same `shm = "NAME"` (a local environment maps the file of a '
            "qemu one)" + ("" if alone else ", or use tcp"))


def probe_args(measured: Target, peer: Target, local_file: Path,
               local_bytes: int) -> tuple[list[str], list[str]]:
    """The region options of the client (in `measured`) and of the server (in `peer`). `local_file`:
    the file of `local_bytes` a local server creates (and removes) when neither end is a guest.
    Raises TargetError."""
    check(measured, peer)
    guests = [t for t in (measured, peer) if t.kind == "qemu"]
    if not guests:
        return (["--shm-path", str(local_file)],
                ["--shm-path", str(local_file), "--shm-size", str(local_bytes)])
    host_file = str(region_path(guests[0].shm_region()))

    def args(t: Target) -> list[str]:
        return PCI_ARGS if t.kind == "qemu" else ["--shm-path", host_file]
    return args(measured), args(peer)
