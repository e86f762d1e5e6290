"""Open the result store: resolve the URL, connect, bring the schema up to date when it is behind."""

from __future__ import annotations

import os
import re
import sqlite3
import time
from pathlib import Path

from sqlalchemy import Engine, create_engine, event, inspect, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError

from rtvbench import file_modes
from rtvbench.errors import InputError, StoreError
from rtvbench.store.defaults import BUSY_TIMEOUT_MS, DEFAULT_URL, RESULTS_DIR, SCHEMA_HEAD  # noqa: F401 (the store's names)

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    # busy_timeout: a second writer waits instead of failing at once.
    # WAL: readers (`rtvbench list` during a run) never block the runner's writes. Switching a new
    # store to it needs the file to itself, and SQLite answers "database is locked" at once, without
    # the busy timeout, while another connection holds it: two commands started together on a new
    # store failed 9 times in 30. The switch is retried for as long as a writer would wait.
    cur = dbapi_conn.cursor()
    cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cur.execute("PRAGMA journal_mode=WAL")
            break
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.005)
    # NORMAL: in WAL mode a commit is in the log file at once and synced at the next checkpoint, so a
    # runner killed at any moment keeps every commit; only a crash of the machine itself may take the
    # last ones (the store stays whole, `run --resume` measures them again). FULL's wait for the disk
    # at every commit is a sleep and a wake-up: 2-6 ms per measurement beside two CPU hogs.
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def _alembic_config():
    from alembic.config import Config      # only when the schema must be checked or changed
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    return cfg


def _read_only_sqlite(url: URL) -> URL | None:
    """For a store file this process cannot write (a read-only file system, a store of another
    user): the URL that opens it read-only, or None when it can be written. Without a writable
    directory SQLite cannot make the WAL index beside the file either, so the file is then
    opened as immutable: nothing can be changing it."""
    path = Path(url.database)
    directory_writable = os.access(path.parent, os.W_OK) and not _read_only_mount(path.parent)
    if path.exists() and os.access(path, os.W_OK) and directory_writable:
        return None
    if not path.exists():
        return None
    query = {"mode": "ro", "uri": "true"}
    if not directory_writable:
        query["immutable"] = "1"
    return url.set(database=f"file:{path}", query=query)


def _read_only_mount(path: Path) -> bool:
    # os.access ignores a read-only mount for root; statvfs does not.
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _schema_state(conn) -> tuple[str | None, str]:
    """(the store's revision, this rtvbench's head revision), read with one query: Alembic is only
    imported when the store must be migrated."""
    if not inspect(conn).has_table("alembic_version"):
        return None, SCHEMA_HEAD
    return conn.execute(text("SELECT version_num FROM alembic_version")).scalar(), SCHEMA_HEAD


def without_password(url: str) -> str:
    """A store URL as a message may show it: its password, if any, as ***. Also for a URL that does
    not parse (a typo in the scheme), whose password SQLAlchemy would not find."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return re.sub(r"(://[^/@:]*:)[^@/]*@", r"\1***@", url)


def open_store(url: str | None = None, write: bool = True) -> Engine:
    """An engine on the store at `url` (default: rtvbench-results/rtvbench.db in the working
    directory) whose schema is at this rtvbench's revision: migrations run only when the store is
    behind. With write=False (list, show, report) a store file that cannot be written is opened
    read-only, which works as long as its schema is current."""
    url = url or DEFAULT_URL
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise InputError(f"--store {without_password(url)!r} is not a database URL; use e.g. "
                         "sqlite:///results.db or postgresql://user@host/db.") from None
    if parsed.drivername == "postgresql":
        # SQLAlchemy's default PostgreSQL driver is psycopg2; the driver rtvbench's `postgres` extra
        # installs, and the one it is tested with, is psycopg 3.
        parsed = parsed.set(drivername="postgresql+psycopg")
    shown = parsed.render_as_string(hide_password=True)
    read_only = None
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:") \
            and not parsed.database.startswith("file:"):
        read_only = None if write else _read_only_sqlite(parsed)
        if read_only is None:
            try:
                file_modes.make_dirs(Path(parsed.database).parent)
            except OSError as e:
                raise StoreError(f"cannot create the directory of store {parsed.database} "
                                 f"({e.strerror}); pass a writable --store.") from None
            try:
                file_modes.create_file(Path(parsed.database))     # not SQLite's world-readable default
            except OSError as e:
                raise StoreError(f"cannot create the store file {parsed.database} ({e.strerror}); "
                                 "pass a writable --store.") from None
    try:
        engine = create_engine(read_only or parsed)
    except ImportError as e:
        if parsed.get_backend_name() == "postgresql":
            fix = ("install it with `pip install 'rtvbench[postgres]'`" if parsed.get_driver_name() == "psycopg"
                   else "install it, or use a postgresql:// URL after `pip install 'rtvbench[postgres]'`")
            raise StoreError(f"--store {shown}: the PostgreSQL driver {e.name or parsed.get_driver_name()} "
                             f"is not installed; {fix}.") from None
        raise StoreError(f"--store {shown}: the driver of this database is not installed ({e}); install "
                         "it, or use a sqlite:/// or postgresql:// URL.") from None
    except NoSuchModuleError as e:
        raise InputError(f"--store {shown}: SQLAlchemy knows no such database ({e}); use a "
                         "sqlite:/// or postgresql:// URL.") from None
    if engine.dialect.name == "sqlite":
        if read_only is None:
            event.listen(engine, "connect", _sqlite_pragmas)
        else:
            event.listen(engine, "connect", lambda c, _r: c.execute("PRAGMA foreign_keys=ON"))
    try:
        with engine.connect() as conn:
            current, head = _schema_state(conn)
        if current != head:
            if read_only is not None:
                raise StoreError(f"the store {shown} is read-only and its schema is at revision "
                                 f"{current or 'none'}, not {head} as this rtvbench needs; open it once "
                                 "where it can be written (any command) to bring it up to date.")
            _upgrade(engine, current, head, shown)
    except SQLAlchemyError as e:
        raise StoreError(f"cannot open the store {shown} "
                         f"({e.__class__.__name__}: {str(e.orig if hasattr(e, 'orig') else e).strip()}); "
                         "check the --store URL and that the database is reachable.") from None
    return engine


#: The key of the PostgreSQL advisory lock that migrations hold (any number the database's other
#: users do not use for their own locks): "rtvb" in ASCII.
_MIGRATION_LOCK = 0x72747662


def _upgrade(engine: Engine, current: str | None, head: str, shown: str) -> None:
    from alembic import command
    from alembic.util import CommandError
    try:
        with engine.begin() as conn:
            # Two rtvbench started together on a new store would both create the tables, and the
            # second would fail on them: each takes a lock held until its transaction ends, and the
            # second then finds the store at head and has nothing to do.
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK})
            elif conn.dialect.name == "sqlite":
                # Python's sqlite3 opens no transaction before DDL on its own: the write lock, now.
                conn.exec_driver_sql("BEGIN IMMEDIATE")
            cfg = _alembic_config()
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")
    except CommandError:
        raise StoreError(f"the store {shown} has schema revision {current}, which this rtvbench does not "
                         f"know (its newest is {head}): it was written by a newer rtvbench; use that "
                         "one or another --store.") from None
