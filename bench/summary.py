#!/usr/bin/env python3
"""One table of every bench's figures: each ratio against its baseline and its goal.

Reads every build/bench/*.json a bench script wrote (bench/figures.py describes the rows) and
prints, per row: the bench, the figure, the baseline it was measured against in the same run, the
median of the per-round ratios and their range, the goal and whether it was met, and the 1-minute
load average before and after that bench's rounds with when its file was written. A file that
cannot be read is a line saying so. Exits 0: it reports, it does not judge (the `met` column does).

usage: bench/summary.py [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
COLUMNS = ("bench", "figure", "baseline", "median", "range", "goal", "met", "load")


def table_rows(doc: dict, written: str) -> list[tuple[str, ...]]:
    load = f"{doc['load_before'][0]:.2f} -> {doc['load_after'][0]:.2f} ({written})"
    out = []
    for row in doc["rows"]:
        met = {True: "yes", False: "NO", None: "-"}[row["met"]]
        out.append((doc["bench"], row["figure"], row["baseline"], f"{row['median']:.3f}",
                    f"{row['min']:.3f}..{row['max']:.3f}", row["goal"] or "-", met, load))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=REPO / "build" / "bench", help="where the benches wrote their files")
    args = ap.parse_args()
    rows: list[tuple[str, ...]] = []
    unread: list[str] = []
    for path in sorted(args.dir.glob("*.json")):
        try:
            # When it was written: a file left from an earlier `make bench` is not this run's.
            written = datetime.fromtimestamp(path.stat().st_mtime).strftime("%Y-%m-%d %H:%M")
            rows += table_rows(json.loads(path.read_text()), written)
        except (OSError, ValueError, KeyError, TypeError, IndexError) as e:
            unread.append(f"{path}: not a bench's figures ({type(e).__name__}: {e}); rerun that bench")
    if not rows and not unread:
        print(f"no bench figures in {args.dir}: run a bench script first (bench/README.md)")
        return 0
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(COLUMNS)]
    print("  ".join(c.ljust(w) for c, w in zip(COLUMNS, widths)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths)))
    for line in unread:
        print(line, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
