"""Every report format of the stored golden runs says what it said when they were recorded
(tests/fixtures/golden: a local run under loads, native against two guests with a neighbour
restarted, a soak). A restructuring of analysis or report must leave every number where it was.

JSON: every value of the recorded document is in the new one at the same place (numbers to 1e-9
relative; keys added since are allowed). CSV: the same rows, every recorded column equal. Markdown and
JUnit: the same text. A change meant to alter a report writes the golden files again
(`tests/fixtures/golden/record.py --reports`), and its diff shows what changed."""

from __future__ import annotations

import csv
import io
import json
import math
import sqlite3
from pathlib import Path

import pytest

from rtvbench.cli import main


GOLDEN = Path(__file__).resolve().parent / "fixtures" / "golden"
FORMATS = {"json": "json", "csv": "csv", "md": "md", "junit": "xml"}


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("golden") / "golden.db"
    with sqlite3.connect(db) as conn:
        conn.executescript((GOLDEN / "runs.sql").read_text(encoding="utf-8"))
    return db


def _run_ids() -> list[int]:
    return sorted(int(p.stem[3:]) for p in GOLDEN.glob("run*.json"))


def _report(store: Path, run_id: int, fmt: str, out: Path, capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        main(["report", "--store", f"sqlite:///{store}", "--campaign", str(run_id), "--format", fmt,
              "-o", str(out)])
    assert exc.value.code == 0, capsys.readouterr().err
    return out.read_text(encoding="utf-8")


#: A tail estimate is where a search found the likelihood's maximum by comparing its values. Near a
#: maximum the likelihood is flat, so a last-bit difference in those values (another numpy's order of
#: summation, another libm's log1p) moves the point found by about the square root of a double's
#: precision, 1.5e-8, and the estimate with it: numpy 2.4 moved them by up to 6e-9. Every other value
#: is held to 1e-9.
FITTED_REL_TOL = 1e-6


def _same(old, new, where: str) -> list[str]:
    """Where `new` lost or changed a value of `old` (a dict may have gained keys)."""
    if isinstance(old, dict):
        if not isinstance(new, dict):
            return [f"{where}: was an object, is {new!r:.80}"]
        out = []
        for k, v in old.items():
            out += _same(v, new[k], f"{where}.{k}") if k in new else [f"{where}.{k}: missing"]
        return out
    if isinstance(old, list):
        if not isinstance(new, list) or len(new) != len(old):
            return [f"{where}: {len(old)} items, now {len(new) if isinstance(new, list) else new!r:.80}"]
        return [d for i, (a, b) in enumerate(zip(old, new)) for d in _same(a, b, f"{where}[{i}]")]
    if isinstance(old, float) and isinstance(new, (int, float)) and not isinstance(new, bool):
        rel = FITTED_REL_TOL if ".estimate." in where else 1e-9
        return [] if math.isclose(old, new, rel_tol=rel, abs_tol=1e-12) else [f"{where}: {old!r} -> {new!r}"]
    return [] if old == new else [f"{where}: {old!r:.80} -> {new!r:.80}"]


def test_the_golden_runs_cover_what_the_reports_show():
    """The fixture exercises the parts of the evaluation a restructuring moves: loads achieved, CPU
    usage, conditions, spike traces, the guests' host usage, a neighbour's restarts, the fingerprint
    diff, requirements and the soak's verdict."""
    docs = [json.loads((GOLDEN / f"run{i}.json").read_text(encoding="utf-8")) for i in _run_ids()]
    ms = [m for d in docs for m in d["measurements"]]
    assert any(a["achieved_percent"] for m in ms for a in m["loads_achieved"])
    assert any(m["cpu_usage"] for m in ms) and any(m["conditions"] for m in ms)
    assert any(m["host_usage"] for m in ms) and any(m["disruption"] for m in ms)
    assert any(d["fingerprint"] and len(d["environments"]) > 1 for d in docs)
    assert any(d["verdicts"] for d in docs) and any(d["soak"] for d in docs)
    assert any(d["comparisons"] for d in docs)


@pytest.mark.parametrize("run_id", _run_ids())
@pytest.mark.parametrize("fmt", FORMATS)
def test_a_report_of_a_golden_run_says_what_it_said(store, run_id, fmt, tmp_path, capsys):
    golden = (GOLDEN / f"run{run_id}.{FORMATS[fmt]}").read_text(encoding="utf-8")
    new = _report(store, run_id, fmt, tmp_path / f"r.{FORMATS[fmt]}", capsys)
    if fmt == "json":
        lost = _same(json.loads(golden), json.loads(new), "$")
        assert not lost, f"{len(lost)} values changed, e.g.:\n" + "\n".join(lost[:20])
    elif fmt == "csv":
        old_rows = list(csv.DictReader(io.StringIO(golden)))
        new_rows = list(csv.DictReader(io.StringIO(new)))
        assert len(new_rows) == len(old_rows)
        for i, (a, b) in enumerate(zip(old_rows, new_rows)):
            assert {k: b.get(k) for k in a} == a, f"row {i + 1}"
    else:
        assert new == golden
