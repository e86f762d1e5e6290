"""The result store: SQLAlchemy Core schema, Alembic migrations, writer and reader."""

from rtvbench.store.db import DEFAULT_URL, RESULTS_DIR, open_store
from rtvbench.store.reader import list_runs, load_run, resolve_run
from rtvbench.store.writer import MeasurementRecorder, RunRecorder, latest_unfinished_run

__all__ = ["DEFAULT_URL", "RESULTS_DIR", "open_store", "list_runs", "load_run", "resolve_run",
           "MeasurementRecorder", "RunRecorder", "latest_unfinished_run"]
