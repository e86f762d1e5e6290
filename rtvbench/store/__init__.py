"""The result store: SQLAlchemy Core schema, Alembic migrations, writer and reader.

Each name is imported from its module when it is first asked for: importing this package (as
`rtvbench list` does for its SQLite read) must not import SQLAlchemy."""

from rtvbench.store.defaults import DEFAULT_URL, RESULTS_DIR

__all__ = ["DEFAULT_URL", "RESULTS_DIR", "open_store", "list_runs", "load_run", "resolve_run",
           "MeasurementRecorder", "RunRecorder", "latest_unfinished_run"]


def __getattr__(name: str):
    if name == "open_store":
        from rtvbench.store.db import open_store as found
    elif name == "list_runs":
        from rtvbench.store.reader import list_runs as found
    elif name == "load_run":
        from rtvbench.store.reader import load_run as found
    elif name == "resolve_run":
        from rtvbench.store.reader import resolve_run as found
    elif name == "MeasurementRecorder":
        from rtvbench.store.writer import MeasurementRecorder as found
    elif name == "RunRecorder":
        from rtvbench.store.writer import RunRecorder as found
    elif name == "latest_unfinished_run":
        from rtvbench.store.writer import latest_unfinished_run as found
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return found
