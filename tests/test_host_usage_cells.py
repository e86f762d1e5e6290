"""What the guests cost the host per cell, as the benchmark's table prints it (each guest's medians,
the cell's totals and its difference to the reference environment), is a figure of the evaluation
and of the JSON report: read from the golden run with two guests (tests/fixtures/golden)."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from rtvbench.analysis.evaluation import evaluate_run
from rtvbench.report import render_evaluation
from rtvbench.store import load_run, open_store

GOLDEN = Path(__file__).resolve().parent / "fixtures" / "golden"


@pytest.fixture(scope="module")
def guests_run(tmp_path_factory):
    db = tmp_path_factory.mktemp("host-usage") / "golden.db"
    with sqlite3.connect(db) as conn:
        conn.executescript((GOLDEN / "runs.sql").read_text(encoding="utf-8"))
    engine = open_store(f"sqlite:///{db}")
    ev = next(e for e in (evaluate_run(load_run(engine, i)) for i in (1, 2, 3)) if e.data.run.campaign_name == "golden-guests")
    return json.loads(render_evaluation(ev, "json")), render_evaluation(ev, "md")


def _table_rows(md: str) -> list[tuple[str, list[str]]]:
    """(benchmark, cells) of every row of every table of what the guests cost the host."""
    out = []
    for m in re.finditer(r"^\*\*(\S+): what the guests cost the host.*\n\n((?:\|.*\n)+)", md, flags=re.MULTILINE):
        lines = m.group(2).splitlines()[2:]
        out += [(m.group(1), [c.strip() for c in line.strip().strip("|").split("|")]) for line in lines]
    return out


def test_every_row_of_the_host_cost_table_is_in_the_json(guests_run):
    doc, md = guests_run
    cells = {(c["benchmark"], c["environment"], c["load"]): c for c in doc["host_usage_cells"]}
    rows = _table_rows(md)
    assert rows
    def mib(v):
        return "–" if v is None else f"{v:.0f}"

    for bench, (env, load, guest, vcpu, wait, other, total, rss, pss, used, available, n, versus) in rows:
        cell = cells[(bench, env, load)]
        if guest == "all":
            assert f"{cell['total_percent']:.1f}" == total and f"{cell['rss_mib']:.0f}" == rss
            assert (mib(cell["guest_used_mib"]), mib(cell["guest_available_mib"])) == (used, available)
            assert f"{cell['pss_mib']:.0f}" == pss and str(len(cell["guests"])) == n
            if versus == "reference":
                assert cell["reference_environment"] == env and cell["versus_reference_points"] == 0
            else:
                assert versus == f"{cell['versus_reference_points']:+.1f} vs {cell['reference_environment']}"
        else:
            (g,) = [g for g in cell["guests"] if g["guest"] == int(guest)]
            assert (f"{g['vcpu_percent']:.1f}", f"{g['other_percent']:.1f}", f"{g['total_percent']:.1f}") == \
                (vcpu, other, total)
            assert f"{g['rss_mib']:.0f}" == rss and f"{g['pss_mib']:.0f}" == pss
            assert (mib(g["guest_used_mib"]), mib(g["guest_available_mib"])) == (used, available)
