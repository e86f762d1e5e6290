"""Open the result store: resolve the URL, connect, bring the schema up to date."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError

from rtvbench.errors import InputError, StoreError

RESULTS_DIR = Path("rtvbench-results")
DEFAULT_URL = f"sqlite:///{RESULTS_DIR / 'rtvbench.db'}"
MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    # WAL: readers (`rtvbench list` during a run) never block the runner's writes;
    # busy_timeout: a second writer waits instead of failing at once.
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA busy_timeout=10000")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def _alembic_config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    return cfg


def open_store(url: str | None = None) -> Engine:
    """An engine on the store at `url` (default: rtvbench-results/rtvbench.db in
    the working directory), with every migration applied."""
    url = url or DEFAULT_URL
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise InputError(f"--store {url!r} is not a database URL; use e.g. "
                         "sqlite:///results.db or postgresql://user@host/db.") from None
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        try:
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"cannot create the directory of store {parsed.database} "
                             f"({e.strerror}); pass a writable --store.") from None
    try:
        engine = create_engine(parsed)
    except (NoSuchModuleError, ImportError) as e:
        raise InputError(f"--store {parsed.render_as_string(hide_password=True)}: no driver "
                         f"for this database ({e}); install it or use a sqlite:/// URL.") from None
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    try:
        with engine.begin() as conn:
            cfg = _alembic_config()
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")
    except SQLAlchemyError as e:
        raise StoreError(f"cannot open the store {parsed.render_as_string(hide_password=True)} "
                         f"({e.__class__.__name__}: {str(e.orig if hasattr(e, 'orig') else e).strip()}); "
                         "check the --store URL and that the database is reachable.") from None
    return engine


