"""What every way into the store agrees on, without SQLAlchemy: where the store is by default, the
schema revision this rtvbench writes, and how long a reader or writer waits for another writer."""

from __future__ import annotations

from pathlib import Path

RESULTS_DIR = Path("rtvbench-results")
DEFAULT_URL = f"sqlite:///{RESULTS_DIR / 'rtvbench.db'}"

#: The newest migration's revision. Reading it from Alembic's script directory means importing
#: Alembic, which costs more than a whole `rtvbench list`; tests/test_old_store.py checks that it is
#: Alembic's head, so a migration cannot be added without it.
SCHEMA_HEAD = "0009"

BUSY_TIMEOUT_MS = 10000
