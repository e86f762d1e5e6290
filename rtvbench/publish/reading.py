"""Reading the runs a publish needs from the store, each in one pass: its history values
(publish.values) and, when its report is to be written, that report, from the same decoded run.

Runs are read in worker processes, one per CPU: a run's decode and report are pure Python and take
tens to hundreds of milliseconds each, so a first publish of a thousand runs scales with the CPUs.
Each worker opens the store itself (a connection does not cross processes)."""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from typing import Callable, Iterator

from rtvbench.analysis.dataset import RunData
from rtvbench.publish.values import run_values

# (run id, its history values, its HTML report or None when none was asked)
ReadRun = tuple[int, list, "bytes | None"]

_worker_store = None


def read_one(store, load: Callable, run_id: int, report: bool, plots: bool) -> ReadRun:
    """One run from `store`, loaded by load(store, run_id) as store.load_run does."""
    run = load(store, run_id)
    if not report:
        return run_id, run_values(RunData(run)), None
    from rtvbench.analysis.evaluation import evaluate_run
    from rtvbench.report import render_evaluation
    ev = evaluate_run(run)
    return run_id, run_values(ev.data), render_evaluation(ev, "html", plots).encode("utf-8")


def _open_in_worker(open_store: Callable) -> None:
    global _worker_store
    _worker_store = open_store()


def _read_in_worker(load: Callable, run_id: int, report: bool, plots: bool) -> ReadRun:
    return read_one(_worker_store, load, run_id, report, plots)


def workers(count: int) -> int:
    """How many processes read `count` runs: one per CPU, none beside this one for a single run."""
    return max(1, min(count, os.cpu_count() or 1))


def read_runs(store, open_store: Callable, load: Callable, todo: list[tuple[int, bool]], plots: bool,
              jobs: int | None = None) -> Iterator[ReadRun]:
    """Each (run id, whether its report is wanted) of `todo` read: in this process through `store` for
    a single worker, else in `jobs` processes (default: one per CPU) that each open the store with
    open_store(). Both functions are sent to the processes: module-level ones, or partials of them."""
    jobs = workers(len(todo)) if jobs is None else max(1, min(jobs, len(todo)))
    if jobs <= 1:
        for run_id, report in todo:
            yield read_one(store, load, run_id, report, plots)
        return
    import multiprocessing
    # fork: a worker starts with every module this process imported, instead of importing them again.
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
    with ProcessPoolExecutor(jobs, mp_context=context, initializer=_open_in_worker, initargs=(open_store,)) as pool:
        # Chunks of a few runs: one message per run would cost more than a small run's read.
        yield from pool.map(_read_in_worker, [load] * len(todo), [r for r, _ in todo], [w for _, w in todo],
                            [plots] * len(todo), chunksize=max(1, min(8, len(todo) // (jobs * 4))))
