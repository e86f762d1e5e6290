"""How well the change points of `rtvbench history --changes` find a planted step, and how often they
call a step where there is none, at the spread of real repetitions.

The noise: each (run, benchmark, cell, figure) of the example store with three or more completed
repetitions gives the spread of its repetitions around their median (the relative median absolute
deviation); the bench uses the median of those, and the 90th percentile as a noisy figure's.
Each trial is a cell's history of 40 nightly runs of 3 repetitions each, drawn with that spread, half
of them with a step of k spreads planted at a random run. Two detectors see the same series: Otava
over the run medians (analysis.changes), and the run-to-run verdict `history` prints without
--changes (analysis.compare's ratio test of each run against the previous one, a step being any
"significant" verdict). A step counts as found when a change point lies within one run of it; every
other change point is a false alarm.

Writes the rates as rows of build/bench/change_points.json (figures.BenchFile).
"""

from __future__ import annotations

import gzip
import sqlite3
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from figures import BenchFile  # noqa: E402

from rtvbench.analysis.changes import step_indices  # noqa: E402
from rtvbench.analysis.compare import ratio_test  # noqa: E402
from rtvbench.analysis.dataset import RunData  # noqa: E402
from rtvbench.store import list_runs, load_run, open_store  # noqa: E402

EXAMPLES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "examples" / "runs.sql.gz"
RUNS, REPETITIONS, TRIALS = 40, 3, 60


def repetition_spreads(dump: Path) -> list[float]:
    """Every cell's relative median absolute deviation of its repetitions, over the dump's runs."""
    spreads = []
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "examples.db"
        with gzip.open(dump, "rt", encoding="utf-8") as f, sqlite3.connect(db) as conn:
            conn.executescript(f.read())
        engine = open_store(f"sqlite:///{db}")
        for row in list_runs(engine):
            data = RunData(load_run(engine, row["id"]))
            for bench in data.benchmarks:
                for env, load in data.cells(bench):
                    for fig in data.figure_names(bench):
                        values = data.values(env, load, bench, fig)
                        med = statistics.median(values) if len(values) >= 3 else 0
                        if med > 0:
                            spreads.append(statistics.median(abs(v - med) for v in values) / med)
    return spreads


def trial_series(rng: np.random.Generator, spread: float, step: float | None) -> tuple[list[list[float]], int | None]:
    """RUNS runs of REPETITIONS values around 100 with the given relative spread (a MAD: sigma = 1.4826
    MAD for normal noise), with a step of `step` spreads from a random run on; the step's run index."""
    at = int(rng.integers(8, RUNS - 8)) if step else None
    sigma = 1.4826 * spread * 100
    runs = []
    for i in range(RUNS):
        level = 100 + (step * spread * 100 if at is not None and i >= at else 0)
        runs.append(list(level + rng.normal(0, sigma, REPETITIONS)))
    return runs, at


def otava_steps(runs: list[list[float]]) -> list[int]:
    return [i for i, _ in step_indices([statistics.median(r) for r in runs])]


def run_to_run_steps(runs: list[list[float]]) -> list[int]:
    return [i for i in range(1, len(runs)) if ratio_test(runs[i - 1], runs[i]).verdict == "significant"]


def score(detect, spread: float, step: float | None, rng: np.random.Generator) -> tuple[float, float]:
    """(share of planted steps found, false alarms per series) over TRIALS series."""
    found = alarms = 0
    for _ in range(TRIALS):
        runs, at = trial_series(rng, spread, step)
        steps = detect(runs)
        hit = [s for s in steps if at is not None and abs(s - at) <= 1]
        found += bool(hit)
        alarms += len(steps) - min(len(hit), 1)
    return found / TRIALS, alarms / TRIALS


def main() -> None:
    bench = BenchFile(__file__)
    spreads = repetition_spreads(EXAMPLES)
    typical, noisy = float(np.percentile(spreads, 50)), float(np.percentile(spreads, 90))
    print(f"{len(spreads)} cells' repetitions in {EXAMPLES.name}: relative MAD median {typical:.2%}, "
          f"90th percentile {noisy:.2%}")
    for label, spread in (("typical", typical), ("noisy", noisy)):
        for name, detect in (("otava", otava_steps), ("run-to-run", run_to_run_steps)):
            rng = np.random.default_rng(11)
            _, flat_alarms = score(detect, spread, None, rng)
            bench.rows.append({"figure": f"{name} false alarms per {RUNS}-run series ({label} noise)",
                               "baseline": "no step", "rounds": TRIALS, "median": round(flat_alarms, 4),
                               "min": round(flat_alarms, 4), "max": round(flat_alarms, 4), "goal": None, "met": None})
            line = [f"{name:10} {label:7} noise: false alarms per flat series {flat_alarms:.2f}"]
            for k in (1, 2, 3, 5):
                rate, alarms = score(detect, spread, k, rng)
                line.append(f"step {k} MAD: found {rate:.0%} (+{alarms:.2f} alarms)")
                bench.rows.append({"figure": f"{name} share of {k}-MAD steps found ({label} noise)",
                                   "baseline": "planted steps", "rounds": TRIALS, "median": round(rate, 4),
                                   "min": round(rate, 4), "max": round(rate, 4), "goal": None, "met": None})
            print("; ".join(line))
    print(f"written {bench.write()}; {bench.load_text()}")


if __name__ == "__main__":
    main()
