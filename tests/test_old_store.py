"""A store written before typed results and the resolved campaign (schema 0003, made by that version
of rtvbench from tests/fixtures/store-0003.toml, kept as its SQL dump) still reports: the store is
migrated, the run's spec is rebuilt from its stored campaign text, and the JSON export keeps every
figure the old one had, with the same value."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from rtvbench.cli import main

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _report(store: Path, fmt: str, out: Path, capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        main(["report", "--store", f"sqlite:///{store}", "--format", fmt, "-o", str(out)])
    assert exc.value.code == 0, capsys.readouterr().err
    return out.read_text(encoding="utf-8")


def test_an_old_store_reports_and_keeps_every_figure(tmp_path, capsys):
    store = tmp_path / "old.db"
    with sqlite3.connect(store) as conn:
        conn.executescript((FIXTURES / "store-0003.sql").read_text(encoding="utf-8"))
    old = json.loads((FIXTURES / "store-0003.figures.json").read_text(encoding="utf-8"))

    doc = json.loads(_report(store, "json", tmp_path / "r.json", capsys))
    # The fixture's keys count repetitions from 0, as the export did when it was recorded.
    new = {f'{m["environment"]}/{m["load"]}/{m["benchmark"]}/{m["repetition"] - 1}': m["figures"]
           for m in doc["measurements"]}
    assert set(new) == set(old["measurements"])
    for key, figures in old["measurements"].items():
        for name, value in figures.items():
            assert new[key].get(name) == pytest.approx(value, rel=1e-12), (key, name)
    # What the old export could not have: each CPU's figures, addressable like the merged ones.
    latency = [k for k in new if "/wakeup/" in k]
    assert latency and all(new[k]["cpu0.count"] + new[k]["cpu1.count"] == new[k]["count"] for k in latency)
    assert [v["status"] for v in doc["verdicts"]] == old["verdicts"]

    html = _report(store, "html", tmp_path / "r.html", capsys)
    assert "wakeup: per CPU" in html and "chase" in html
    # The benchmarks table shows the defaults the run used, not only what the file said.
    assert "priority = 80" in html and "policy = fifo" in html


def test_the_schema_head_rtvbench_checks_without_alembic_is_alembics_head():
    """open_store compares a store's revision with SCHEMA_HEAD instead of importing Alembic on every
    command; a new migration must move it."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from rtvbench.store.db import MIGRATIONS, SCHEMA_HEAD
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    assert ScriptDirectory.from_config(cfg).get_current_head() == SCHEMA_HEAD
