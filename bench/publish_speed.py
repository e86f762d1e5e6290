"""How long `rtvbench publish` takes over a store of a thousand nightly runs: the first publish, a
publish with nothing new, and a publish after one more run, each as a ratio to `rtvbench list` of the
same store (a command's start plus one read of the runs table) measured beside it in alternating
pairs (bench/figures.py).

The store: RUNS nightly runs of a campaign of 7 latency benchmarks (7 compared figures each: 49
figure pages) on one board, 3 repetitions each. TEMPLATES runs are written the way the runner writes
them (the tests' synthetic runs, each of its own seed, the later half a fifth slower: a step the
changes page shows); every other run is a copy of one of them made in SQL, in one transaction, with
its own id, start time and kernel tag: a thousand runs in seconds where writing each would take
minutes. Copies keep their template's values, which the publish decodes like any other run's.

Goals, as ratios to `list` of the same store in the same round:
- nothing new <= 5: such a publish reads the list of runs and the kept values (values.json), renders
  every page again to compare its hash and writes none; a few `list`s.
- one new run <= 10: the same plus one run read and reported and the 49 figure pages' change points
  found again; what a nightly job waits for after its run, about as long as a handful of commands.
- first publish: reported per run (its time / RUNS) and against `list` without a goal, since it
  decodes and reports every run once (one worker process per CPU) and happens once per site.

Usage: bench/publish_speed.py [RUNS] [--rounds R] (default 1000 runs, 3 rounds).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

from figures import BenchFile, alternating, describe  # noqa: E402
from synthetic_runs import build_run, lognormal_latency, store_run  # noqa: E402

from rtvbench.campaign.reader import parse_campaign  # noqa: E402
from rtvbench.store import open_store  # noqa: E402

BENCHMARKS = 7
TEMPLATES = 6
CAMPAIGN = "name = \"nightly\"\nrepetitions = 3\n[environments.board]\ntarget = \"local\"\n[loads.idle]\n" + "".join(
    f"[benchmarks.w{i}]\nkind = \"latency\"\ninterval_us = 200\nduration_s = 10\n" for i in range(BENCHMARKS))
FIRST_NIGHT = datetime(2026, 1, 1, 2, 0)


def store_template(engine, seed: int, slower: bool) -> int:
    """One run written as the runner writes it; its id."""
    campaign = parse_campaign(CAMPAIGN).data
    run = build_run(campaign, {("board", "idle"): lognormal_latency(2_000 * (1.2 if slower else 1.0))},
                    repetitions=3, samples=200, seed=seed, benchmark="w0")
    # build_run makes one benchmark; the others are its copies under their names
    run = replace(run, measurements=[replace(m, benchmark=f"w{b}", id=m.id + 1000 * b)
                                     for b in range(BENCHMARKS) for m in run.measurements])
    return store_run(engine, CAMPAIGN, run, {"kernel": "template"})


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [f'"{r[1]}"' for r in conn.execute(f"PRAGMA table_info({table})") if r[1] != "id"]


def copy_runs(db: Path, templates: list[int], first: int, count: int) -> None:
    """Runs number first .. first+count-1 (ids follow the store's), each a copy of a template: the
    early half of the nights copies the first half of the templates, the later half the slower ones."""
    conn = sqlite3.connect(db)
    run_cols = [c for c in _columns(conn, "runs") if c not in ('"tags"', '"started_at"', '"finished_at"')]
    m_cols = [c for c in _columns(conn, "measurements") if c != '"run_id"']
    r_cols = [c for c in _columns(conn, "records") if c != '"measurement_id"']
    f_cols = [c for c in _columns(conn, "fingerprints") if c != '"run_id"']
    half = len(templates) // 2
    with conn:
        for n in range(first, first + count):
            group = templates[:half] if n <= 600 else templates[half:]
            template = group[n % len(group)]
            night = FIRST_NIGHT + timedelta(days=n)
            new = conn.execute(f"INSERT INTO runs ({', '.join(run_cols)}, tags, started_at, finished_at) "
                               f"SELECT {', '.join(run_cols)}, ?, ?, ? FROM runs WHERE id = ?",
                               (json.dumps({"kernel": f"6.{n}"}), str(night), str(night + timedelta(hours=1)),
                                template)).lastrowid
            conn.execute(f"INSERT INTO fingerprints (run_id, {', '.join(f_cols)}) SELECT ?, {', '.join(f_cols)} "
                         "FROM fingerprints WHERE run_id = ?", (new, template))
            for (old_m,) in conn.execute("SELECT id FROM measurements WHERE run_id = ? ORDER BY id",
                                         (template,)).fetchall():
                new_m = conn.execute(f"INSERT INTO measurements (run_id, {', '.join(m_cols)}) "
                                     f"SELECT ?, {', '.join(m_cols)} FROM measurements WHERE id = ?",
                                     (new, old_m)).lastrowid
                conn.execute(f"INSERT INTO records (measurement_id, {', '.join(r_cols)}) "
                             f"SELECT ?, {', '.join(r_cols)} FROM records WHERE measurement_id = ?", (new_m, old_m))
    conn.close()


def build_store(tmp: Path, runs: int) -> tuple[str, Path, list[int]]:
    """A store of `runs` runs whose first TEMPLATES are the templates; its URL, file and template ids."""
    db = tmp / "store.db"
    url = f"sqlite:///{db}"
    engine = open_store(url)
    templates = [store_template(engine, seed, slower=i >= TEMPLATES // 2) for i, seed in
                 enumerate(range(1, TEMPLATES + 1))]
    engine.dispose()
    copy_runs(db, templates, TEMPLATES + 1, runs - TEMPLATES)
    return url, db, templates


def timed(*args: str) -> tuple[float, str]:
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "rtvbench", *args], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return time.perf_counter() - t, proc.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="?", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    bench = BenchFile(__file__)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        t = time.perf_counter()
        url, db, templates = build_store(tmp, args.runs)
        print(f"store of {args.runs} runs x {BENCHMARKS * 7} figures built in {time.perf_counter() - t:.1f} s "
              f"({db.stat().st_size / 1e6:.0f} MB)")
        listing = lambda: timed("list", "--store", url)[0]  # noqa: E731
        listing()                                             # its bytecode cached, the file in the page cache
        site = tmp / "site"
        firsts = []

        def first() -> float:
            shutil.rmtree(site, ignore_errors=True)
            took, out = timed("publish", "-o", str(site), "--json", "--store", url)
            done = json.loads(out)
            assert len(done["runs_read"]) == args.runs, len(done["runs_read"])
            firsts.append((took, len(done["written"])))
            return took

        pairs = alternating(args.rounds, first, listing)
        row = bench.add("first publish / list", "rtvbench list of the same store", [a / b for a, b in pairs])
        print(describe(row))
        per_run = statistics.median(t for t, _ in firsts) / args.runs
        print(f"first publish: median {statistics.median(t for t, _ in firsts):.1f} s, worst "
              f"{max(t for t, _ in firsts):.1f} s for {firsts[0][1]} pages: {per_run * 1000:.0f} ms per run; "
              f"`list` median {statistics.median(b for _, b in pairs):.2f} s")

        def nothing_new() -> float:
            took, out = timed("publish", "-o", str(site), "--json", "--store", url)
            done = json.loads(out)
            assert done["written"] == [] and done["runs_read"] == [], (done["written"], done["runs_read"])
            return took

        pairs = alternating(args.rounds, nothing_new, listing)
        print(describe(bench.add("publish with nothing new / list", "rtvbench list of the same store",
                                 [a / b for a, b in pairs], "<= 5")))
        nights = iter(range(args.runs + 1, args.runs + 1 + args.rounds))
        written = []

        def one_new() -> float:
            copy_runs(db, templates, next(nights), 1)
            took, out = timed("publish", "-o", str(site), "--json", "--store", url)
            done = json.loads(out)
            assert len(done["runs_read"]) == 1, done["runs_read"]
            written.append(len(done["written"]))
            return took

        pairs = alternating(args.rounds, one_new, listing)
        print(describe(bench.add("publish after one new run / list", "rtvbench list of the same store",
                                 [a / b for a, b in pairs], "<= 10")))
        print(f"after one new run: median {statistics.median(a for a, _ in pairs):.2f} s, worst "
              f"{max(a for a, _ in pairs):.2f} s, {min(written)}..{max(written)} pages written; "
              f"`list` median {statistics.median(b for _, b in pairs):.2f} s")
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"largest resident set of any publish or list process: {rss:.0f} MiB")
    print(f"written {bench.write()}; {bench.load_text()}")


if __name__ == "__main__":
    main()
