"""What a run keeps in directories every user can write to (/dev/shm, the temporary directory).

rtvbench often runs as root, and another user of the machine can plant a name there before a run
creates it: a symlink at a predictable name would have the run overwrite what it points to. So a
run's file there is created exclusively and never through a symlink (O_CREAT|O_EXCL|O_NOFOLLOW),
mode 0600, and a directory with mkdtemp (0700); both names start with the pid of the rtvbench
process that owns them, followed by a random part: `<prefix><pid>-<random>`.

A run killed with SIGKILL removes nothing, and a shm region holds up to 1 GiB of RAM: sweep(), at
the start of every command but the brief ones (list, show, validate), removes what runs of this user
left whose process is gone, the way targets/qemu/netns.py deletes their network namespaces.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# shutil and tempfile are imported where a directory is made or removed: every target imports this
# module, and validate, which makes none, would pay a third of an interpreter start for them.

SHM_DIR = Path("/dev/shm")
#: a shm region file in SHM_DIR: `rtvb-<pid>-<random>-NAME` (the sweep also takes an earlier
#: version's `rtvb-<pid>-NAME`)
REGION_PREFIX = "rtvb-"
#: a run's directories in the temporary directory: a guest's sockets and logs, the PDF printer's
#: page and browser profile, the KVM check's firmware
DIR_PREFIXES = ("rtvb-qemu-", "rtvbench-pdf-", "rtvb-kvm-")
_ATTEMPTS = 8


def alive(pid: int) -> bool:
    """Whether a process runs (an exited one that its parent did not reap yet does not)."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
        return stat_line[stat_line.rindex(")") + 2] != "Z"
    except FileNotFoundError:
        return False
    except (OSError, ValueError, IndexError):
        pass
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def fresh_name(prefix: str, tail: str = "") -> str:
    """`<prefix><this pid>-<random>[-tail]`: a name nobody can guess before the run makes it."""
    import secrets      # here: it imports OpenSSL's hashes, and the commands that make no file start quicker

    return f"{prefix}{os.getpid()}-{secrets.token_hex(8)}" + (f"-{tail}" if tail else "")


def create_file(directory: Path, prefix: str, tail: str = "") -> tuple[Path, int]:
    """A new empty file of this run in `directory` (mode 0600) and its open descriptor, read-write.
    A name somebody took already (planted) is passed over for another random one. OSError."""
    attempts = 0
    while True:
        path = directory / fresh_name(prefix, tail)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            attempts += 1
            if attempts == _ATTEMPTS:
                raise
            continue
        os.fchmod(fd, 0o600)            # whatever the umask
        return path, fd


def make_dir(prefix: str) -> Path:
    """A new directory of this run (mode 0700) in the temporary directory."""
    import tempfile
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-"))


def remove_own(path: Path) -> None:
    """Remove `path` if it is a regular file of this user: what another user planted at the name of
    a file that was never made stays."""
    try:
        st = os.lstat(path)
        if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid():
            path.unlink()
    except OSError:
        pass


@contextmanager
def temporary_dir(prefix: str) -> Iterator[Path]:
    """make_dir(prefix), removed with what it holds on the way out."""
    import shutil
    path = make_dir(prefix)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _owner_pid(name: str, prefix: str) -> int | None:
    m = re.match(re.escape(prefix) + r"(\d+)-", name)
    return int(m.group(1)) if m else None


def _dead_runs_entries(directory: Path, prefixes: tuple[str, ...], want_dir: bool) -> list[Path]:
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    found = []
    for name in names:
        if not name.startswith(prefixes):   # most of a shared temporary directory: no pattern match each
            continue
        pid = next((p for p in (_owner_pid(name, pre) for pre in prefixes) if p is not None), None)
        if pid is None or pid == os.getpid() or alive(pid):
            continue
        try:
            st = os.lstat(directory / name)          # a symlink is not ours: never followed, never removed
        except OSError:
            continue
        kind_ok = stat.S_ISDIR(st.st_mode) if want_dir else stat.S_ISREG(st.st_mode)
        if kind_ok and st.st_uid == os.geteuid():
            found.append(directory / name)
    return found


def sweep(shm_dir: Path = SHM_DIR, temp_dir: Path | None = None) -> list[Path]:
    """Remove the shm regions and the directories that runs of this user left when they were killed
    (their process is gone); what was removed. A live run's files are never touched."""
    import shutil
    import tempfile
    temp_dir = Path(tempfile.gettempdir()) if temp_dir is None else temp_dir
    gone = []
    for path in _dead_runs_entries(shm_dir, (REGION_PREFIX,), want_dir=False):
        try:
            path.unlink()
            gone.append(path)
        except OSError:
            pass
    for path in _dead_runs_entries(temp_dir, DIR_PREFIXES, want_dir=True):
        # rmtree works through directory descriptors here: a symlink inside is removed, not followed.
        if shutil.rmtree.avoids_symlink_attacks:
            shutil.rmtree(path, ignore_errors=True)
            if not path.exists():
                gone.append(path)
    return gone
