#!/usr/bin/env python3
"""`rtvbench report` of one stored run by an earlier revision and by this checkout, alternated.

A restructuring of analysis and report should not make the report slower. Both sides report the
same run of the golden store (tests/fixtures/golden/runs.sql: a local run under loads, native
against guests with a neighbour restarted, a soak), each from a store of its own (a newer checkout
may upgrade the store's schema). Rounds alternate which side goes first, so the machine's other
work lands on both alike; the figure is the median of the per-round ratios new / old of CPU time
(user + system of the report process), with its range, beside the wall-time medians and the load
average.

usage: bench/report_ab.py --rev REV [--run N] [--format html|md|json|csv|junit] [--rounds R]
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO / "tests" / "fixtures" / "golden" / "runs.sql"


def checkout(rev: str, into: Path) -> Path:
    """The package of revision `rev`, unpacked (git archive: no work tree of its own to clean up)."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "rtvbench"], check=True,
                             capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def store(path: Path) -> str:
    with sqlite3.connect(path) as conn:
        conn.executescript(GOLDEN.read_text(encoding="utf-8"))
    return f"sqlite:///{path}"


def cells(path: Path, run: int) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT COUNT(*) FROM (SELECT DISTINCT environment, load, benchmark FROM measurements "
                            "WHERE run_id = ?)", (run,)).fetchone()[0]


def report(tree: Path, url: str, run: int, fmt: str, out: Path) -> tuple[float, float]:
    """(CPU s, wall s) of one `rtvbench report` by the package in `tree`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rtvbench", "report", "--store", url, "--campaign", str(run),
                    "--format", fmt, "-o", str(out)], check=True, cwd=out.parent,
                   env=dict(os.environ, PYTHONPATH=str(tree)), stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rev", required=True, help="the earlier revision (a commit, tag or branch)")
    ap.add_argument("--run", type=int, default=1, help="the golden run to report (default 1)")
    ap.add_argument("--format", default="html", choices=["html", "md", "json", "csv", "junit"])
    ap.add_argument("--rounds", type=int, default=8)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        old_tree = checkout(args.rev, work / "old")
        sides = {"old": (old_tree, store(work / "old.db")), "new": (REPO, store(work / "new.db"))}
        n_cells = cells(work / "new.db", args.run)
        load_before = os.getloadavg()[0]
        times: dict[str, list[tuple[float, float]]] = {"old": [], "new": []}
        for i in range(args.rounds):
            for side in (("old", "new") if i % 2 == 0 else ("new", "old")):
                tree, url = sides[side]
                times[side].append(report(tree, url, args.run, args.format, work / f"r-{side}.{args.format}"))
        load_after = os.getloadavg()[0]
    ratios = [n[0] / o[0] for o, n in zip(times["old"], times["new"])]
    print(f"rtvbench report --format {args.format} of golden run {args.run} ({n_cells} cells), {args.rounds} "
          f"alternated rounds; load average {load_before:.2f} before, {load_after:.2f} after")
    for side, label in (("old", args.rev), ("new", "this checkout")):
        cpu = statistics.median(t[0] for t in times[side])
        wall = statistics.median(t[1] for t in times[side])
        print(f"  {side} ({label}): CPU {cpu:.2f} s, wall {wall:.2f} s (medians)")
    print(f"  new / old CPU: median {statistics.median(ratios):.2f} (rounds {min(ratios):.2f} .. {max(ratios):.2f})")


if __name__ == "__main__":
    main()
