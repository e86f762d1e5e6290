"""The store on PostgreSQL (a throwaway server of the tests' own, tests/postgres_server.py): the URLs and
the driver, then real campaigns, a runner killed and resumed, and two runners storing at once.
The store's own tests run on PostgreSQL too (the `store_url` fixture)."""

from __future__ import annotations

import sys

import pytest

from rtvbench.cli import main
from rtvbench.errors import StoreError
from rtvbench.store import open_store
from rtvbench.store.db import SCHEMA_HEAD


def test_without_the_driver_a_postgresql_url_names_the_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "psycopg", None)          # as if it were not installed
    with pytest.raises(SystemExit) as exc:
        main(["list", "--store", "postgresql://ci:secret@db.example/results"])
    assert exc.value.code == StoreError.exit_code
    assert capsys.readouterr().err.strip() == (
        "rtvbench: --store postgresql+psycopg://ci:***@db.example/results: the PostgreSQL driver psycopg is "
        "not installed; install it with `pip install 'rtvbench[postgres]'`.")


def test_a_plain_postgresql_url_is_psycopg(postgres_server):
    url = postgres_server.url(postgres_server.create_database(), driver="postgresql")
    engine = open_store(url)
    assert engine.dialect.driver == "psycopg"
    with engine.connect() as conn:
        assert conn.exec_driver_sql("select version_num from alembic_version").scalar() == SCHEMA_HEAD
