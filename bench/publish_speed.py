"""How long `rtvbench publish` takes over a large store, first and after one more run, as ratios to
`rtvbench list` of the same store (a command's start plus one read of the runs table), measured in the
same run.

The store: RUNS nightly runs of a campaign of 7 latency benchmarks (7 compared figures each: 49
figure pages) on one board, 3 repetitions each, built with the tests' synthetic runs. The first
publish renders every run's report (without plots: --no-plots) and every page; the incremental one
follows one new run. Usage: bench/publish_speed.py [RUNS] (default 1000).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

from figures import BenchFile  # noqa: E402
from synthetic_runs import build_run, lognormal_latency, store_run  # noqa: E402

from rtvbench.campaign.reader import parse_campaign  # noqa: E402
from rtvbench.store import open_store  # noqa: E402

BENCHMARKS = 7
CAMPAIGN = "name = \"nightly\"\nrepetitions = 3\n[environments.board]\ntarget = \"local\"\n[loads.idle]\n" + "".join(
    f"[benchmarks.w{i}]\nkind = \"latency\"\ninterval_us = 200\nduration_s = 10\n" for i in range(BENCHMARKS))


def add_runs(engine, first: int, count: int) -> None:
    campaign = parse_campaign(CAMPAIGN).data
    for n in range(first, first + count):
        run = build_run(campaign, {("board", "idle"): lognormal_latency(2_000 * (1.2 if n > 600 else 1.0))},
                        repetitions=3, samples=200, seed=n, benchmark="w0")
        # build_run makes one benchmark; the others are its copies under their names
        from dataclasses import replace
        run = replace(run, measurements=[replace(m, benchmark=f"w{b}", id=m.id + 1000 * b)
                                         for b in range(BENCHMARKS) for m in run.measurements])
        store_run(engine, CAMPAIGN, run, {"kernel": f"6.{n}"})


def timed(*args: str) -> tuple[float, str]:
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "rtvbench", *args], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return time.perf_counter() - t, proc.stdout


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    bench = BenchFile(__file__)
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/store.db"
        engine = open_store(url)
        t = time.perf_counter()
        add_runs(engine, 1, runs)
        print(f"store of {runs} runs x {BENCHMARKS * 7} figures built in {time.perf_counter() - t:.1f} s")
        site = f"{tmp}/site"
        first, out = timed("publish", "-o", site, "--no-plots", "--json", "--store", url)
        pages = len(json.loads(out)["written"])
        lists = [timed("list", "--store", url)[0] for _ in range(3)]
        add_runs(engine, runs + 1, 1)
        again, out = timed("publish", "-o", site, "--no-plots", "--json", "--store", url)
        done = json.loads(out)
        base = statistics.median(lists)
        print(f"first publish {first:.1f} s ({pages} pages), incremental {again:.1f} s "
              f"({len(done['written'])} written, {len(done['unchanged'])} unchanged), `list` {base:.2f} s")
        bench.add("first publish / list", "rtvbench list of the same store", [first / base])
        bench.add("incremental publish / list", "rtvbench list of the same store", [again / base])
    print(f"written {bench.write()}; {bench.load_text()}")


if __name__ == "__main__":
    main()
