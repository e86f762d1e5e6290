"""Reading the store with plain SQL, through one of two connections: the standard library's sqlite3
for a SQLite store file at this rtvbench's schema, SQLAlchemy for every other store. SQLAlchemy's
import by itself costs several times a whole interpreter start, which `list`, `show` and `report`
need not pay on the SQLite store most users have. The queries are written once (reader.py, listing.py),
with :name parameters, which both connections take."""

from __future__ import annotations

import json
import os
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote

from rtvbench.errors import StoreError
from rtvbench.store.defaults import BUSY_TIMEOUT_MS, DEFAULT_URL, SCHEMA_HEAD


def _failed(e: Exception) -> StoreError:
    return StoreError(f"reading the store failed ({e.__class__.__name__}: {getattr(e, 'orig', e)}); "
                      "check the --store database.")


class SqliteReading:
    """A SQLite store file read through sqlite3."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def rows(self, sql: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        try:
            cur = self._conn.execute(sql, params or {})
            names = [d[0] for d in cur.description]
            return [dict(zip(names, row)) for row in cur.fetchall()]
        except sqlite3.Error as e:
            raise _failed(e) from None


class EngineReading:
    """Any store, read through a SQLAlchemy engine."""

    def __init__(self, engine) -> None:
        self.engine = engine

    def rows(self, sql: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        from sqlalchemy import text
        from sqlalchemy.exc import SQLAlchemyError
        try:
            with self.engine.connect() as conn:
                return [dict(r) for r in conn.execute(text(sql), params or {}).mappings()]
        except SQLAlchemyError as e:
            raise _failed(e) from None


def reading_of(source) -> SqliteReading | EngineReading:
    """A reading of `source`: a reading already, or a SQLAlchemy engine."""
    return source if isinstance(source, (SqliteReading, EngineReading)) else EngineReading(source)


def plain_sqlite(url: str) -> SqliteReading | None:
    """A sqlite3 reading of the SQLite store file `url` names; None wherever that is not the plain case
    (another database, a URL with options, a store missing, read-only or behind this rtvbench's
    schema, a file sqlite3 cannot read): the full way then creates, migrates or opens it read-only,
    and says what is wrong in its own words."""
    prefix = "sqlite:///"
    path = url[len(prefix):] if url.startswith(prefix) else ""
    if not path or path == ":memory:" or path.startswith("file:") or any(c in path for c in "?%"):
        return None
    file = Path(path)
    if not (file.is_file() and os.access(file, os.W_OK) and os.access(file.parent, os.W_OK)):
        return None
    try:
        # mode=rw: a store removed meanwhile is not created empty here.
        conn = sqlite3.connect(f"file:{quote(str(file.absolute()))}?mode=rw", uri=True,
                               timeout=BUSY_TIMEOUT_MS / 1000)
    except sqlite3.Error:
        return None
    try:
        current = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    except sqlite3.Error:
        current = None
    if current != (SCHEMA_HEAD,):
        conn.close()
        return None
    return SqliteReading(conn)


def open_reading(url: str | None) -> SqliteReading | EngineReading:
    """A reading of the store at `url` (default: the one in the working directory), through sqlite3
    where plain_sqlite can, else opened as `open_store(url, write=False)` opens it."""
    reading = plain_sqlite(url or DEFAULT_URL)
    if reading is not None:
        return reading
    from rtvbench.store.db import open_store
    return EngineReading(open_store(url, write=False))


def json_value(text: str | None) -> Any:
    """A JSON column read as its text (CAST(column AS TEXT), the same on every database), decoded; text
    that is not JSON raises ValueError."""
    return None if text is None else json.loads(text)


def utc_time(value: Any) -> datetime | None:
    """A time column's value, aware: SQLite hands back the naive text SQLAlchemy wrote, PostgreSQL a
    datetime. Everything in the store is UTC."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value
