"""The report of a run whose lanes measured side by side (`rtvbench run --jobs`) is the report of the
same results measured one after another: the store's rows come in the order the lanes finished, and
the report orders them by the plan, not by their ids or times."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from rtvbench.cli import main

pytestmark = pytest.mark.functional

GOLDEN = Path(__file__).resolve().parent / "fixtures" / "golden"
CHILDREN = ("records", "load_records", "cpu_samples")


def _store(path: Path, reorder: bool) -> Path:
    """The golden runs; with reorder, every run's measurements stored in the reverse order of their
    ids, as lanes finishing in another order would have stored them."""
    with sqlite3.connect(path) as conn:
        conn.executescript((GOLDEN / "runs.sql").read_text(encoding="utf-8"))
        if reorder:
            for (run_id,) in conn.execute("select id from runs").fetchall():
                ids = [i for (i,) in conn.execute("select id from measurements where run_id = ? order by id",
                                                  (run_id,))]
                # Out of the way first, then each row at the place of its mirror image.
                for table, column in (("measurements", "id"), *((t, "measurement_id") for t in CHILDREN)):
                    conn.execute(f"update {table} set {column} = -{column} where {column} between ? and ?",
                                 (ids[0], ids[-1]))
                    for old, new in zip(ids, reversed(ids)):
                        conn.execute(f"update {table} set {column} = ? where {column} = ?", (new, -old))
    return path


def _report(store: Path, run_id: int, out: Path, capsys) -> dict:
    with pytest.raises(SystemExit) as exc:
        main(["report", "--store", f"sqlite:///{store}", "--campaign", str(run_id), "--format", "json",
              "-o", str(out)])
    assert exc.value.code == 0, capsys.readouterr().err
    return json.loads(out.read_text(encoding="utf-8"))


def test_measurements_stored_in_another_order_give_the_same_report(tmp_path, capsys):
    plain, reordered = _store(tmp_path / "a.db", False), _store(tmp_path / "b.db", True)
    with sqlite3.connect(plain) as a, sqlite3.connect(reordered) as b:
        query = "select id, environment, load, benchmark, repetition from measurements order by id"
        before, after = a.execute(query).fetchall(), b.execute(query).fetchall()
    assert before != after and sorted(r[1:] for r in before) == sorted(r[1:] for r in after)
    for run_id in (1, 2, 3):
        first = _report(plain, run_id, tmp_path / f"a{run_id}.json", capsys)
        second = _report(reordered, run_id, tmp_path / f"b{run_id}.json", capsys)
        # The rows' ids differ (they name rows of each store); everything else is the same.
        for report in (first, second):
            for m in report["measurements"] + report["failed_attempts"]:
                m.pop("id")
        assert first == second
