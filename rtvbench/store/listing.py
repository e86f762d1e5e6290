"""The list of runs (`rtvbench list`): one query for every database, and for a SQLite store file at
this rtvbench's schema a read through the standard library's sqlite3 alone. SQLAlchemy's import by
itself costs several times a whole interpreter start, and listing is what a user expects at once."""

from __future__ import annotations

import json
import os
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote

from rtvbench.store.defaults import BUSY_TIMEOUT_MS, SCHEMA_HEAD
from rtvbench.store.lease import holder_alive

_COLUMNS = ("id", "campaign_name", "status", "seed", "started_at", "finished_at", "runner", "heartbeat_at",
            "tags", "note", "measurements", "ok")

# Every run, newest first, with its measurement counts over the latest attempt of each measurement
# (see schema.measurements). Plain SQL that SQLite and PostgreSQL both read, without parameters.
LIST_SQL = """
SELECT runs.id, runs.campaign_name, runs.status, runs.seed, runs.started_at, runs.finished_at, runs.runner,
       runs.heartbeat_at, runs.tags, runs.note, counts.measurements, counts.ok
FROM runs LEFT OUTER JOIN (
    SELECT newest.run_id, count(*) AS measurements,
           sum(CASE WHEN newest.status = 'ok' THEN 1 ELSE 0 END) AS ok
    FROM (SELECT m.run_id, m.status FROM measurements AS m
          WHERE m.attempt = (SELECT max(m2.attempt) FROM measurements AS m2
                             WHERE m2.run_id = m.run_id AND m2.environment = m.environment
                               AND m2."load" = m."load" AND m2.benchmark = m.benchmark
                               AND m2.repetition = m.repetition)) AS newest
    GROUP BY newest.run_id) AS counts ON counts.run_id = runs.id
ORDER BY runs.id DESC
"""


def _time(value: Any) -> datetime | None:
    # SQLite hands back the text SQLAlchemy wrote, naive; PostgreSQL a datetime. Everything is UTC.
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value


def listed_runs(rows) -> list[dict[str, Any]]:
    """LIST_SQL's rows as the runs `list` shows. A run whose runner is gone (killed, its machine lost)
    without saying so has the status "abandoned": `run --resume` continues it. A tags cell that is
    not JSON raises ValueError."""
    out = []
    for row in rows:
        r = dict(zip(_COLUMNS, row))
        for key in ("started_at", "finished_at", "heartbeat_at"):
            r[key] = _time(r[key])
        tags = json.loads(r["tags"]) if isinstance(r["tags"], str) else r["tags"]
        r["tags"] = tags or {}
        r["measurements"], r["ok"] = r["measurements"] or 0, r["ok"] or 0
        if r["status"] == "running" and (not r["runner"] or holder_alive(r["runner"], r["heartbeat_at"]) is None):
            r["status"] = "abandoned"
        out.append(r)
    return out


def sqlite_runs(url: str) -> list[dict[str, Any]] | None:
    """The runs of the SQLite store file `url` names, read with sqlite3; None wherever that is not the
    plain case (another database, a URL with options, a store missing, read-only or behind this
    rtvbench's schema, anything sqlite3 cannot read): the caller then opens the store the full way,
    which creates, migrates or opens it read-only, and says what is wrong in its own words."""
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
        if conn.execute("SELECT version_num FROM alembic_version").fetchone() != (SCHEMA_HEAD,):
            return None
        return listed_runs(conn.execute(LIST_SQL).fetchall())
    except (sqlite3.Error, ValueError):
        return None
    finally:
        conn.close()
