"""What a run has stored so far, for tests that act on a run while it measures: they wait for a
record to be in the store (an observable state) rather than for a while."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path


def stored_records(db: Path, kind: str | None = None) -> int:
    """How many probe output records (of type `kind`, or of any type) the run in the SQLite file
    `db` has stored so far; 0 before the runner has created the file or its tables."""
    if not Path(db).exists():
        return 0
    query, args = "select count(*) from records", ()
    if kind is not None:
        query, args = query + " where type = ?", (kind,)
    try:
        # Read-only: a look must never create the file or take a write lock from the runner.
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)) as con:
            return con.execute(query, args).fetchone()[0]
    except sqlite3.OperationalError:
        return 0
