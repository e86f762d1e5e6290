"""Who may read what rtvbench keeps for its user: store files, reports and their directories.

A run describes a machine in detail and rtvbench often runs as root, so what it creates is its
user's alone by default: files 0600, directories 0700, whatever the process's umask. A team that
shares a store or reports through a group sets RTVBENCH_UMASK, an octal umask: 027 lets the group
read (0640, 0750), 007 lets it write too. A file or directory that exists already keeps the
permissions its owner gave it.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from rtvbench.errors import InputError

ENV = "RTVBENCH_UMASK"
DEFAULT_UMASK = 0o077


def umask() -> int:
    """The umask for what rtvbench creates: RTVBENCH_UMASK, or 077. Raises InputError."""
    value = os.environ.get(ENV, "").strip()
    if not value:
        return DEFAULT_UMASK
    if not re.fullmatch(r"0?[0-7]{1,3}", value):
        raise InputError(f"{ENV}={value!r} is not an octal umask; set it to e.g. 027 (the group may read) "
                         "or unset it (only the owner may read, the default).")
    return int(value, 8)


def file_mode() -> int:
    return 0o666 & ~umask()


def dir_mode() -> int:
    return 0o777 & ~umask()


def make_dirs(path: Path) -> None:
    """Create `path` and its missing parents with dir_mode(); existing ones are left as they are."""
    missing = []
    while not path.exists():
        missing.append(path)
        if path.parent == path:
            break
        path = path.parent
    mode = dir_mode()
    for d in reversed(missing):
        try:
            d.mkdir()
        except FileExistsError:
            continue            # made meanwhile by another command: its own business
        os.chmod(d, mode)


def create_file(path: Path) -> None:
    """Create the empty file `path` with file_mode() unless it exists (a store SQLite then fills:
    SQLite gives its journal the database file's permissions)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        return
    try:
        os.fchmod(fd, file_mode())
    finally:
        os.close(fd)


def replace_file(path: Path, data: bytes) -> None:
    """Write `data` to `path` whole or not at all: into a new file beside it (a random name, created
    exclusively) renamed over it. The file gets the permissions of the one it replaces, else
    file_mode(). OSError."""
    try:
        st = path.stat()
        mode = st.st_mode & 0o7777
    except FileNotFoundError:
        st, mode = None, file_mode()
    if st is not None and not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
        # A device or a FIFO (`-o /dev/null`, `-o /dev/stdout`) is written into: renaming a file over
        # it would, as root, put a regular file where the device was.
        with open(path, "wb") as f:
            f.write(data)
        return
    import tempfile         # every command reads the umask here; only a writing one needs this
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            os.fchmod(f.fileno(), mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
