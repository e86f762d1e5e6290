"""The report's alloc_dealloc table of `mem-alloc` (rtvbench/kinds/mem_alloc/section.py), from a short
campaign of the real probe: per method, touch and size, the average, minimum and maximum of every
allocate/touch/free cycle over the completed repetitions, checked against each repetition's own figures
in the JSON export."""

from __future__ import annotations

import json
import re

import pytest

from host_helpers import cli_env, run_cli, run_report
from rtvbench.units import significant

pytestmark = pytest.mark.functional

CAMPAIGN = """
name = "alloc-cycles"
repetitions = 2
seed = 1

[environments.native]
target = "local"

[benchmarks.alloc]
kind = "mem-alloc"
tests = ["alloc"]
sizes = ["2M", "4M"]
methods = ["mmap", "reuse"]
touch = ["page"]
iterations = 4
quick = true
"""


def test_alloc_cycles_table_shows_ave_min_max_over_every_cycle(probe, tmp_path):
    (tmp_path / "c.toml").write_text(CAMPAIGN)
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", "--export-json", "r.json", cwd=tmp_path,
                env=cli_env(probe), timeout=300)
    assert r.returncode == 0, r.stderr
    html = run_report(r)
    doc = json.loads((tmp_path / "r.json").read_text())
    # Each repetition's figures over its own cycles (equally many in each): the pooled average is their mean.
    reps: dict[tuple, list[dict]] = {}
    for m in doc["measurements"]:
        assert m["status"] == "ok"
        for method in ("mmap", "reuse"):
            for size in ("2MiB", "4MiB"):
                reps.setdefault((method, size), []).append(
                    {s: m["figures"][f"alloc.{method}.page.{size}.{s}"] for s in ("avg", "min", "max")})
    assert all(len(v) == 2 for v in reps.values())
    start = html.index("alloc: allocate, touch and free, every cycle: average, minimum, maximum")
    table = html[start:html.index("</table>", start)]
    cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", table, re.S)]
    header = ["Environment / load", "Method", "Size", "Unit", "Ave", "Min", "Max", "Cycles"]
    assert cells[:8] == header
    rows = [cells[i:i + 8] for i in range(8, len(cells), 8)]
    assert [(row[1], row[2]) for row in rows] == [("mmap + page touch", "2 MiB"), ("mmap + page touch", "4 MiB"),
                                                 ("reuse + page touch", "2 MiB"), ("reuse + page touch", "4 MiB")]
    for row in rows:
        figs = reps[(row[1].split()[0], row[2].replace(" ", ""))]
        assert row[7] == "8"           # 4 iterations x 2 repetitions
        scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[row[3]]
        avg = sum(f["avg"] for f in figs) / 2
        lo, hi = min(f["min"] for f in figs), max(f["max"] for f in figs)
        assert row[4:7] == [significant(avg / scale), significant(lo / scale), significant(hi / scale)], row
        assert lo <= avg <= hi
