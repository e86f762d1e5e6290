"""A throwaway PostgreSQL server for the tests: Debian's binaries, a cluster in a temporary directory,
reached only through a unix socket in that directory.

PostgreSQL refuses to run as root, and the tests run as root: the cluster belongs to the `postgres`
user, which Debian's postgresql package creates together with the binaries this needs.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

USER = "postgres"
# The server sits idle beside the measuring tests of the same session: no autovacuum, and its
# background writers wake rarely. Nothing here needs to survive a crash of the machine.
QUIET = ("-c listen_addresses='' -c fsync=off -c synchronous_commit=off -c full_page_writes=off "
         "-c autovacuum=off -c bgwriter_delay=10000ms -c wal_writer_delay=10000ms -c max_connections=50")


def binaries() -> Path | None:
    """The newest installed /usr/lib/postgresql/<version>/bin that has a server."""
    found = [Path(p).parent for p in glob.glob("/usr/lib/postgresql/*/bin/postgres")]
    found.sort(key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    return found[-1] if found else None


def missing() -> str | None:
    """Why no server can be started here, or None."""
    if binaries() is None:
        return ("PostgreSQL's server is not installed (no /usr/lib/postgresql/<version>/bin/postgres); "
                "`make setup` installs Debian's postgresql package")
    try:
        pwd.getpwnam(USER)
    except KeyError:
        return f"there is no {USER!r} user to run PostgreSQL as (Debian's postgresql package creates it)"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "runuser (util-linux) is needed to start PostgreSQL as another user than root"
    return None


class Server:
    def __init__(self) -> None:
        self.bin = binaries()
        # Not pytest's tmp_path: /tmp/pytest-of-root is root's alone, and the server's user must reach
        # its socket directory. The path stays short: a unix socket's path has 107 bytes at most.
        self.dir = Path(tempfile.mkdtemp(prefix="rtvb-pg-"))
        self.data = self.dir / "data"
        self.log = self.dir / "server.log"
        if os.geteuid() == 0:
            entry = pwd.getpwnam(USER)
            os.chown(self.dir, entry.pw_uid, entry.pw_gid)
        self._databases = 0

    def _as_user(self, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
        prefix = ["runuser", "-u", USER, "--"] if os.geteuid() == 0 else []
        return subprocess.run(prefix + list(argv), capture_output=True, text=True, timeout=timeout)

    def start(self) -> None:
        r = self._as_user(str(self.bin / "initdb"), "-D", str(self.data), "-U", USER, "-A", "trust",
                          "-E", "UTF8", "--locale=C", "--no-sync")
        if r.returncode != 0:
            raise RuntimeError(f"initdb failed: {r.stderr.strip()}")
        r = self._as_user(str(self.bin / "pg_ctl"), "start", "-w", "-t", "60", "-D", str(self.data),
                          "-l", str(self.log), "-o", f"-k {self.dir} {QUIET}")
        if r.returncode != 0:
            log = self.log.read_text(errors="replace") if self.log.exists() else ""
            raise RuntimeError(f"pg_ctl start failed: {r.stderr.strip()}\n{log}")

    def stop(self) -> None:
        # Immediate: the cluster is thrown away, nothing needs a clean shutdown checkpoint.
        if (self.data / "postmaster.pid").exists():
            self._as_user(str(self.bin / "pg_ctl"), "stop", "-D", str(self.data), "-m", "immediate", "-w")
        shutil.rmtree(self.dir, ignore_errors=True)

    def url(self, database: str = "postgres", driver: str = "postgresql+psycopg") -> str:
        return f"{driver}://{USER}@/{database}?host={self.dir}"

    def create_database(self) -> str:
        """A new empty database; its name."""
        import psycopg
        self._databases += 1
        name = f"t{os.getpid()}_{self._databases}"
        with psycopg.connect(host=str(self.dir), user=USER, dbname="postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return name
