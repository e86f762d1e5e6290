"""Hostile files for `rtvbench import`, generated from a small valid file of every format with a fixed
seed: truncated, nested deep, with Infinity, 1e400, huge, negative and impossible numbers (min above
max, a share above 100 %), thousands of threads, bins beyond any latency, and odd file names. Each
is either refused with one sentence (InputError, exit 2) or imported, and then every figure read
back from the store is one the tool could have written and the report of it is made. Never another
exception (exit 70), never a hang, never 500 MB of memory."""

from __future__ import annotations

import json
import math
import os
import random
import re
import resource
import sqlite3
import subprocess
import tempfile
import threading
import time

import pytest

from host_helpers import cli_argv, cli_env, run_cli
from rtvbench.analysis.kind import get_kind
from rtvbench.errors import InputError
from rtvbench.kinds.command.formats import (MAX_BUCKETS, MAX_COUNT, MAX_HISTOGRAM_CELLS, MAX_LATENCY_US,
                                            MAX_OUTPUT_BYTES, MAX_SERIES)
from rtvbench.report import render
from rtvbench.runner.importer import import_file
from rtvbench.store import load_run, open_store

from hostile_outputs import BASE, explosion, hist_text, mutate, thread

pytestmark = pytest.mark.functional

SEED = 20261127
CASES = 360
def _check_stored(engine, run_id: int) -> None:
    """Every figure of the imported run is one the tool could have written, and its histograms are
    within the bounds the report is quick for."""
    run = load_run(engine, run_id)
    [m] = run.measurements
    [result] = m.results
    figures, units = result["figures"], result["units"]
    assert figures
    for name, value in figures.items():
        assert isinstance(value, float) and math.isfinite(value) and value >= 0, (name, value)
        if units[name] == "%":
            assert value <= 100, (name, value)
        if units[name] == "count":
            assert value <= MAX_COUNT, (name, value)
        if name.endswith("_us") and re.search(r"(min|avg|max)_us$", name):
            assert value <= MAX_LATENCY_US, (name, value)
    for name, value in figures.items():
        if "min_" in name and name.replace("min_", "max_") in figures:
            assert value <= figures[name.replace("min_", "max_")], name
    hists = result["histograms"]
    assert len(hists) <= MAX_SERIES + 1 and sum(len(b) for b in hists.values()) <= MAX_HISTOGRAM_CELLS
    assert sum(1 for k in hists if k.startswith("thread")) <= MAX_SERIES
    for buckets in hists.values():
        assert len(buckets) <= MAX_BUCKETS and all(0 <= lo < hi <= MAX_LATENCY_US * 1000 and n >= 0
                                                   for lo, hi, n in buckets)
    decoded = get_kind("command").decode(m)
    for h in [*decoded.distributions.values(), *decoded.cpu_distributions.values()]:
        h.percentile(99)


def test_hostile_files_are_imported_soundly_or_refused_in_one_sentence(tmp_path):
    rng = random.Random(SEED)
    engine = open_store(f"sqlite:///{tmp_path}/s.db")
    outcome = {"imported": 0, "refused": 0}
    per_format: dict[str, dict[str, int]] = {}
    worst, worst_case = 0.0, ""
    start = time.process_time()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    formats = sorted(BASE)
    last_imported: dict[str, int] = {}
    for i in range(CASES):
        fmt = formats[i % len(formats)]
        path = tmp_path / f"case{i}"
        path.write_text(mutate(rng, fmt), encoding="utf-8", errors="surrogateescape")
        one = time.process_time()
        try:
            run_id = import_file(engine, path, fmt, "board", benchmark=f"b{i}")
        except InputError as e:
            said = str(e)
            assert "\n" not in said and said.startswith(str(path)) and len(said) < 600, said
            outcome["refused"] += 1
            per_format.setdefault(fmt, {"imported": 0, "refused": 0})["refused"] += 1
        else:
            _check_stored(engine, run_id)
            last_imported[fmt] = run_id
            outcome["imported"] += 1
            per_format.setdefault(fmt, {"imported": 0, "refused": 0})["imported"] += 1
        took = time.process_time() - one
        if took > worst:
            worst, worst_case = took, f"case {i} ({fmt})"
        path.unlink()
    slowest_report = 0.0
    for run_id in last_imported.values():         # reports of accepted hostile files
        one = time.process_time()
        run = load_run(engine, run_id)
        assert json.loads(render(run, "json"))["measurements"] and "<html" in render(run, "html")
        slowest_report = max(slowest_report, time.process_time() - one)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
    print(f"slowest report of an imported hostile file: {slowest_report:.2f} s of CPU")
    print(f"import fuzz: {CASES} files, {outcome}, per format {per_format}, worst {worst:.2f} s of CPU "
          f"({worst_case}), peak memory grown by {grown_mb:.0f} MB")
    assert all(v["imported"] and v["refused"] for v in per_format.values()), per_format
    assert time.process_time() - start < 60            # a hang guard: some 5 s here
    assert slowest_report < 30, slowest_report
    assert grown_mb < 500, grown_mb


IMPOSSIBLE = [
    ("cyclictest-json", '{"thread": {"0": {"cycles": Infinity, "min": 1, "avg": 2, "max": 3}}}',
     "cyclictest-json: the JSON has Infinity, which is not a number JSON allows."),
    ("cyclictest-json", '{"thread": {"0": {"cycles": 1e400, "min": 1, "avg": 2, "max": 3}}}',
     "cyclictest-json: the JSON has the number 1e400, beyond what a float holds."),
    ("cyclictest-json", '{"thread": {"0": {"cycles": -5, "min": 1, "avg": 2, "max": 3}}}',
     "cyclictest-json: `cycles` of thread 0 is -5, not a count"),
    ("cyclictest-json", '{"thread": {"0": {"cycles": 5, "min": 900, "avg": 2, "max": 1}}}',
     "cyclictest-json: thread 0 has min 900 us above its max 1 us."),
    ("cyclictest-json", '{"thread": ' + "[" * 5000 + "]" * 5000 + "}",
     "cyclictest-json: the JSON is nested more than 64 levels deep"),
    ("hyperfine-json", '{"results": ' + "[" * 5000 + "]" * 5000 + "}", "hyperfine-json: the JSON is nested more"),
    ("iperf3-json", '{"end": ' + "{\"a\": " * 5000 + "1" + "}" * 5000 + "}", "iperf3-json: the JSON is nested more"),
    ("rtla-osnoise", "Max Single\n  0 #3 1000 10 300 5 5 0 0 1 0 0\n",
     "rtla-osnoise: figure cpu0.availability_percent is 300 %, above 100 %, which it cannot be."),
    ("rtla-timerlat", "  0 #10 | 1 -2 3 4 | 1 2 3 4\n", "rtla-timerlat: CPU 0 (irq) has min -2 us, outside 0.."),
    ("stress-ng-yaml", "metrics:\n    - stressor: cpu\n      bogo-ops: -5\n      bogo-ops-per-second-real-time: 1\n",
     "stress-ng-yaml: figure cpu.bogo_ops is -5, below 0, which it cannot be."),
    ("iperf3-json", '{"end": {"sum": {"jitter_ms": 1, "lost_packets": 1, "lost_percent": 200, "packets": 2, '
     '"bits_per_second": 1}}}', "iperf3-json: figure lost_percent is 200 %, above 100 %"),
    ("cyclictest-json", json.dumps({"thread": {"0": {**thread(0), "histogram": {str(10**14): 1}}}}),
     "cyclictest-json: thread 0 has a histogram bin at 100000000000000 us, beyond the 3600000000 us"),
    ("cyclictest-hist", hist_text(10_000, 1), f"cyclictest-hist: the output has 10000 threads, more than the {MAX_SERIES}"),
    ("cyclictest-hist", hist_text(MAX_SERIES + 1, 1),
     f"cyclictest-hist: the output has {MAX_SERIES + 1} threads, more than the {MAX_SERIES}"),
    ("cyclictest-json", explosion("cyclictest-json", 100_000), "cyclictest-json: the output has 100000 threads"),
    ("iperf3-json", '{"end": {}, "x": [' + "{}, " * 1_100_000 + "{}]}",
     "iperf3-json: the JSON has 1,100,004 objects and arrays, more than the 1,000,000 one output may have"),
]


@pytest.mark.parametrize("fmt,text,said", IMPOSSIBLE, ids=[f"{f}-{i}" for i, (f, _, _) in enumerate(IMPOSSIBLE)])
def test_an_impossible_figure_is_refused_naming_it(tmp_path, fmt, text, said):
    path = tmp_path / "bad.out"
    path.write_text(text)
    with pytest.raises(InputError) as e:
        import_file(open_store(f"sqlite:///{tmp_path}/s.db"), path, fmt, "board")
    assert str(e.value).startswith(f"{path}: {said}"), str(e.value)
    assert e.value.exit_code == 2


def test_a_file_beyond_the_size_limit_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "huge.json"
    with path.open("wb") as f:
        f.truncate(MAX_OUTPUT_BYTES + 1)
    with pytest.raises(InputError, match=r"huge.json is 16,777,217 bytes, more than a results file has \(16,777,216\)"):
        import_file(open_store(f"sqlite:///{tmp_path}/s.db"), path, "iperf3-json", "board")


def _run_cli_rss(*args: str, cwd, env, timeout: float = 120) -> tuple[subprocess.CompletedProcess, float]:
    """run_cli, and the peak RSS in MB of that command alone: the worker's RUSAGE_CHILDREN would also
    count what other tests in the same pytest worker started."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cli_argv(*args), cwd=cwd, env=env, stdout=out, stderr=err)
        hang_guard = threading.Timer(timeout, proc.kill)
        hang_guard.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        except BaseException:
            proc.kill()
            raise
        finally:
            hang_guard.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        done = subprocess.CompletedProcess(proc.args, proc.returncode, out.read().decode(), err.read().decode())
    return done, usage.ru_maxrss / 1024


def test_odd_file_names_hostile_files_and_the_largest_import_end_to_end(tmp_path):
    """Through the CLI: exit 2 or 0, never 70; odd names kept readable in the stored campaign and
    command; and the largest file the limits let in reports in bounded time and memory."""
    env = cli_env()
    store = "sqlite:///s.db"
    names = [b"new\nline.json", b"bad\xffbyte.json", b"esc\x1b[31mred.json"]
    for raw in names:
        path = os.path.join(os.fsencode(tmp_path), raw)
        with open(path, "w") as f:
            f.write(BASE["hyperfine-json"])
        r = run_cli("import", os.fsdecode(path), "--format", "hyperfine-json", "--environment", "board",
                    "--store", store, cwd=tmp_path, env=env)
        assert r.returncode == 0, r.stderr
    with sqlite3.connect(tmp_path / "s.db") as db:
        stored = [json.loads(c) for (c,) in db.execute("SELECT command FROM measurements ORDER BY id")]
    shown = [c[1].rsplit("/", 1)[1] for c in stored]
    assert shown == ["new\\x0aline.json", "bad\\xffbyte.json", "esc\\x1b[31mred.json"], shown
    r = run_cli("report", "--campaign", "2", "--store", store, "--format", "md", "-o", "-", cwd=tmp_path, env=env)
    assert r.returncode == 0 and "bad\\xffbyte.json" in r.stdout, r.stderr

    for fmt, text in (("cyclictest-json", IMPOSSIBLE[0][1]), ("hyperfine-json", IMPOSSIBLE[5][1]),
                      ("cyclictest-hist", hist_text(10_000, 1))):
        (tmp_path / "bad").write_text(text)
        r = run_cli("import", "bad", "--format", fmt, "--environment", "board", "--store", store,
                    cwd=tmp_path, env=env)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and r.stderr.startswith(f"rtvbench: bad: {fmt}: "), r.stderr

    # The most the limits let in: 512 CPUs with a histogram of 1 900 bins each (973 312 buckets),
    # and as many threads with a histogram of 1 900 bins each (the plots draw the 24 longest tails).
    largest = [("cyclictest-json", json.dumps({"thread": {str(i): thread(i, 1900) for i in range(MAX_SERIES)}})),
               ("cyclictest-hist", hist_text(MAX_SERIES, 1900))]
    peaks = []
    for i, (fmt, text) in enumerate(largest):
        (tmp_path / f"large{i}").write_text(text)
        r, rss = _run_cli_rss("import", f"large{i}", "--format", fmt, "--environment", "board", "--campaign",
                              f"large{i}", "--store", store, cwd=tmp_path, env=env)
        assert r.returncode == 0, r.stderr
        peaks.append(rss)
        for report in ("json", "html"):
            started = time.monotonic()
            r, rss = _run_cli_rss("report", "--campaign", f"large{i}", "--store", store, "--format", report,
                                  "-o", f"r{i}.{report}", cwd=tmp_path, env=env)
            took = time.monotonic() - started
            assert r.returncode == 0, r.stderr
            peaks.append(rss)
            print(f"report {report} of the largest {fmt} import: {took:.1f} s, {rss:.0f} MB RSS, "
                  f"{(tmp_path / f'r{i}.{report}').stat().st_size / 1e6:.1f} MB")
    rss = max(peaks)
    print(f"largest command's RSS {rss:.0f} MB")
    assert rss < 500, rss


def test_stored_histograms_beyond_the_bounds_are_not_plotted():
    """A store written before the bounds (or by hand) may hold what the parsers now refuse."""
    from rtvbench.results import Measurement

    fine = [[1000, 2000, 5]]
    stored = {"all": fine, "cpu0": [[10**23, 10**23 + 1000, 1]], "cpu1": [[-1000, 0, 1]],
              "cpu2": [[MAX_LATENCY_US * 1000, MAX_LATENCY_US * 1000 + 1000, 1]], "cpu3": fine}
    result = {"type": "result", "format": "cyclictest-json", "figures": {"max_us": 2.0}, "histograms": stored}
    m = Measurement(id=1, environment="e", load="l", benchmark="b", kind="command", repetition=0, status="ok",
                    command=[], load_commands=[], started_at=None, finished_at=None, meta=None,
                    results=[result], windows=[], warnings=[])
    decoded = get_kind("command").decode(m)
    assert "latency" in decoded.distributions and sorted(decoded.cpu_distributions) == [3]
    # Beyond what one output may have: none of its histograms is drawn.
    for beyond in ({f"thread{i}": fine for i in range(MAX_SERIES + 2)},
                   {"all": fine, "cpu0": [[i * 1000, i * 1000 + 1000, 1] for i in range(MAX_BUCKETS + 1)]}):
        result["histograms"] = beyond
        decoded = get_kind("command").decode(m)
        assert not decoded.distributions and not decoded.cpu_distributions
