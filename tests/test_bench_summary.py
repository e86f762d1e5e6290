"""bench/figures.py and bench/summary.py: the rows a bench writes, and the one table made of them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

import figures  # noqa: E402

pytestmark = pytest.mark.functional


def test_alternating_flips_the_order_every_round_and_pairs_the_values():
    ran: list[str] = []

    def side(name: str):
        def run() -> str:
            ran.append(name)
            return f"{name}{len(ran)}"
        return run
    pairs = figures.alternating(4, side("a"), side("b"))
    assert ran == ["a", "b", "b", "a", "a", "b", "b", "a"]
    assert pairs == [("a1", "b2"), ("a4", "b3"), ("a5", "b6"), ("a8", "b7")]


@pytest.mark.parametrize("goal, value, met", [("<= 1.01", 1.01, True), ("<= 1.01", 1.0101, False),
                                              (">= 0.95", 0.95, True), (">= 0.95", 0.9, False), (None, 7.0, None)])
def test_goal_met(goal, value, met):
    assert figures.goal_met(goal, value) is met


def test_a_goal_in_another_form_is_refused():
    with pytest.raises(ValueError, match="'< 2'"):
        figures.goal_met("< 2", 1.0)


def test_bench_file_rows_and_summary_table(tmp_path, monkeypatch):
    monkeypatch.setattr(figures, "OUT", tmp_path)
    out = figures.BenchFile("/somewhere/bench/campaign_overhead.py")
    row = out.add("span / probe elapsed", "the probe's own elapsed time", [1.03, 1.01, 1.02], "<= 1.01")
    out.add("wall / bare", "bare loop", [1.4, 1.2])
    path = out.write()
    assert path == tmp_path / "campaign_overhead.json"
    doc = json.loads(path.read_text())
    assert doc["bench"] == "campaign_overhead"
    assert len(doc["load_before"]) == 3 and len(doc["load_after"]) == 3
    assert row == {"figure": "span / probe elapsed", "baseline": "the probe's own elapsed time", "rounds": 3,
                   "median": 1.02, "min": 1.01, "max": 1.03, "goal": "<= 1.01", "met": False}
    assert doc["rows"][1] == {"figure": "wall / bare", "baseline": "bare loop", "rounds": 2, "median": 1.3,
                              "min": 1.2, "max": 1.4, "goal": None, "met": None}
    (tmp_path / "broken.json").write_text("{not json")

    proc = subprocess.run([sys.executable, str(REPO / "bench/summary.py"), "--dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    header, rule, *lines = proc.stdout.splitlines()
    assert header.split() == ["bench", "figure", "baseline", "median", "range", "goal", "met", "load"]
    assert len(lines) == 2
    assert "campaign_overhead" in lines[0] and "1.020" in lines[0] and "1.010..1.030" in lines[0]
    assert "<= 1.01" in lines[0] and " NO " in lines[0]
    assert "1.300" in lines[1] and "1.200..1.400" in lines[1]
    assert "broken.json: not a bench's figures" in proc.stderr and "rerun that bench" in proc.stderr


def test_summary_of_no_files_says_what_to_run(tmp_path):
    proc = subprocess.run([sys.executable, str(REPO / "bench/summary.py"), "--dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    assert "no bench figures" in proc.stdout and "bench/README.md" in proc.stdout
