"""`rtvbench import` keeps what a tool gives per run: hyperfine's times as samples that compare and
history test, cyclictest's histograms as percentiles, iperf3's intervals, stress-ng's stressors read
as YAML, and files imported as the repetitions of one measurement. The files are made here by the
real tools (scripts/setup.sh installs them); what is checked is their structure and counts, never
how fast this machine is, except that a sleep of 300 ms takes longer than a process start and a sleep of
1 ms (a busy machine delays a start by tens of milliseconds, not hundreds)."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
from pathlib import Path

import pytest

from host_helpers import cli_env, run_cli
from rtvbench.analysis.dataset import RunData
from rtvbench.kinds.command import formats
from rtvbench.kinds.command.formats import FormatError, parse
from rtvbench.store import load_run, open_store
from test_command_kind import STORE, need

RUNS = 10
# Sleeps far enough apart that no stall of a busy machine puts a fast run above a slow one.
FAST_S, SLOW_S = 0.001, 0.3


def hyperfine(tmp_path: Path, name: str, seconds: float, runs: int = RUNS) -> Path:
    """hyperfine's JSON of `sleep SECONDS` run `runs` times, under the command name `work` (so that
    two sleeps of different length have the same figures)."""
    need("hyperfine")
    path = tmp_path / name
    p = subprocess.run(["hyperfine", "-N", "-r", str(runs), "--style", "none", "-n", "work", f"sleep {seconds}",
                        "--export-json", str(path)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return path


def cli(tmp_path: Path, *args: str):
    return run_cli(*args, "--store", STORE, cwd=tmp_path, env=cli_env())


def import_ok(tmp_path: Path, *args: str) -> int:
    r = cli(tmp_path, "import", *args, "--environment", "board")
    assert r.returncode == 0, r.stderr
    return int(re.match(r"Run (\d+) ", r.stdout.splitlines()[-1]).group(1))


def results(tmp_path: Path, run_id: int) -> list[dict]:
    run = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), run_id)
    return [m.results[0] for m in sorted(run.measurements, key=lambda m: m.repetition)]


def comparison(tmp_path: Path, a: int, b: int, figure: str) -> tuple[dict, dict]:
    r = cli(tmp_path, "compare", str(a), str(b), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    [c] = [c for c in doc["comparisons"] if c["figure"] == figure]
    return c, doc


@pytest.mark.functional
def test_hyperfine_times_are_the_samples_of_its_figures(tmp_path):
    path = hyperfine(tmp_path, "a.json", 0.01)
    [r] = results(tmp_path, import_ok(tmp_path, str(path), "--format", "hyperfine-json"))
    own = json.loads(path.read_text())["results"][0]
    times = [t * 1e3 for t in own["times"]]
    assert r["samples"] == {"work.time_ms": pytest.approx(times, rel=1e-12)} and len(times) == RUNS
    f = r["figures"]
    # The figures computed from the times are hyperfine's own.
    for key in ("mean", "median", "min", "max", "stddev"):
        assert f[f"work.{key}_ms"] == pytest.approx(own[key] * 1e3, rel=1e-9), key
    assert f["work.time_ms"] == f["work.median_ms"] and f["work.runs"] == RUNS
    assert r["parameters"] == {"commands": ["work"]}


# Times real sleeps: a measuring test, not a functional one.
@pytest.mark.peer
def test_two_imports_of_ten_hyperfine_runs_compare_with_a_verdict(tmp_path):
    fast, slow = hyperfine(tmp_path, "fast.json", FAST_S), hyperfine(tmp_path, "slow.json", SLOW_S)
    a = import_ok(tmp_path, str(fast), "--format", "hyperfine-json")
    b = import_ok(tmp_path, str(slow), "--format", "hyperfine-json")
    c, doc = comparison(tmp_path, a, b, "work.time_ms")
    # 10 runs a side: a rank test decides.
    assert (c["n_baseline"], c["n_candidate"]) == (RUNS, RUNS)
    assert c["verdict"] == "significant" and c["overhead_percent"] > 0 and c["p_value"] < 0.05
    assert c["method"].startswith("Mann-Whitney")
    # The files' names differ, the tool's recorded parameters do not.
    assert doc["notes"] == []
    r = cli(tmp_path, "history", "hyperfine-json.work.time_ms", "--json")
    assert r.returncode == 0, r.stderr
    [series] = json.loads(r.stdout)["series"]
    first, second = series["points"]
    assert len(first["values"]) == len(second["values"]) == RUNS
    assert second["against_previous"]["verdict"] == "significant"


# Times real sleeps: a measuring test, not a functional one.
@pytest.mark.peer
def test_files_as_repetitions_are_one_run_that_compares(tmp_path):
    fast = [hyperfine(tmp_path, f"fast{i}.json", FAST_S, runs=2) for i in range(5)]
    slow = [hyperfine(tmp_path, f"slow{i}.json", SLOW_S, runs=2) for i in range(5)]
    a = import_ok(tmp_path, *map(str, fast), "--as-repetitions", "--format", "hyperfine-json")
    b = import_ok(tmp_path, *map(str, slow), "--as-repetitions", "--format", "hyperfine-json")
    assert len(results(tmp_path, a)) == len(results(tmp_path, b)) == 5
    c, doc = comparison(tmp_path, a, b, "work.mean_ms")
    assert (c["n_baseline"], c["n_candidate"]) == (5, 5)
    assert c["verdict"] == "significant" and c["overhead_percent"] > 0
    # Each repetition's runs are samples of time_ms: 5 files of 2 runs.
    c, _ = comparison(tmp_path, a, b, "work.time_ms")
    assert (c["n_baseline"], c["n_candidate"]) == (10, 10)
    # Without --as-repetitions, each file is a run of its own.
    r = cli(tmp_path, "import", str(fast[0]), str(fast[1]), "--format", "hyperfine-json", "--environment", "board")
    assert r.returncode == 0 and len(r.stdout.strip().splitlines()) == 2, r.stderr


@pytest.mark.functional
@pytest.mark.parametrize("odd, message", [
    ("other.json", r"^rtvbench: other\.json: the tool recorded other parameters \(.*\) than in a\.json "
                   r"\(.*\), so it is no repetition of the same measurement; import it on its own\.$"),
    ("odd.txt", r"^rtvbench: odd\.txt: hyperfine-json: the output is not JSON .*$"),
])
def test_a_file_of_another_measurement_is_refused_by_name(tmp_path, odd, message):
    hyperfine(tmp_path, "a.json", 0.001, runs=2)
    (tmp_path / "other.json").write_text(json.dumps({"results": [{"command": "sleep 1", "mean": 1.0,
                                                                  "times": [1.0, 1.0]}]}))
    (tmp_path / "odd.txt").write_text("T: 0 ( 1) P:99 I:1000 C: 10 Min: 1 Act: 2 Avg: 2 Max: 3\n")
    r = cli(tmp_path, "import", "a.json", odd, "--as-repetitions", "--format", "hyperfine-json",
            "--environment", "board")
    assert r.returncode == 2 and re.match(message, r.stderr.strip()), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    if (tmp_path / "s.db").exists():
        with sqlite3.connect(tmp_path / "s.db") as db:
            assert db.execute("SELECT count(*) FROM runs").fetchone() == (0,)


@pytest.mark.functional
def test_cyclictest_histograms_give_percentiles_and_a_merged_histogram(tmp_path):
    need("cyclictest")
    files = []
    for i in range(2):
        path = tmp_path / f"ct{i}.json"
        p = subprocess.run(["cyclictest", "-D1", "-i1000", "-t2", "-a", "-h", "20000", "-q", f"--json={path}"],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        files.append(path)
    ids = [import_ok(tmp_path, str(p), "--format", "cyclictest-json") for p in files]
    [r] = results(tmp_path, ids[0])
    assert r["parameters"] == {"command": "cyclictest -D1 -i1000 -t2 -a -h 20000 -q"}
    threads = json.loads(files[0].read_text())["thread"]
    merged = r["histograms"]["all"]
    assert sum(c for *_, c in merged) == sum(sum(t["histogram"].values()) for t in threads.values())
    assert sum(c for *_, c in merged) == sum(c for key, h in r["histograms"].items() if key != "all" for *_, c in h)
    # The decoded figures: percentiles from the histograms, in order between min and max.
    run = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), ids[0])
    f = RunData(run).figures(run.measurements[0])
    for prefix in ["", *{f"cpu{t['cpu']}." for t in threads.values()}]:
        chain = [f[f"{prefix}{s}"] for s in ("min_us", "p50_us", "p90_us", "p99_us", "p999_us", "max_us")]
        assert chain == sorted(chain), (prefix, chain)
    # Two runs of the same command line compare without a note on their parameters.
    _, doc = comparison(tmp_path, *ids, "max_us")
    assert doc["notes"] == []


@pytest.mark.functional
def test_iperf3_intervals_and_test_parameters_are_kept():
    text = json.dumps({
        "start": {"test_start": {"protocol": "TCP", "num_streams": 1, "blksize": 131072, "duration": 3,
                                 "reverse": 0, "nested": {"left": "out"}}},
        "intervals": [{"sum": {"start": i, "end": i + 1.0, "bits_per_second": bps}}
                      for i, bps in enumerate((8e9, 9e9, 7e9))],
        "end": {"sum_sent": {"bits_per_second": 8e9, "bytes": 3e9, "retransmits": 0},
                "sum_received": {"bits_per_second": 8e9, "bytes": 3e9}}})
    r = parse("iperf3-json", text).record("iperf3-json")
    assert r["series"] == {"bps": [[1.0, 8e9], [2.0, 9e9], [3.0, 7e9]]}
    assert (r["figures"]["interval_min_bps"], r["figures"]["interval_max_bps"]) == (7e9, 9e9)
    assert r["parameters"] == {"protocol": "TCP", "num_streams": 1, "blksize": 131072, "duration": 3, "reverse": 0}


@pytest.mark.functional
def test_stress_ng_yaml_is_read_as_yaml():
    # Flow style, which a line-by-line reader would not see: one entry per stressor.
    text = ("---\nmetrics: [{stressor: cpu, bogo-ops: 100, bogo-ops-per-second-real-time: 50.5, max-rss: 2},"
            " {stressor: vm, bogo-ops-per-second-real-time: 7}]\n...\n")
    r = parse("stress-ng-yaml", text).record("stress-ng-yaml")
    assert r["figures"] == {"cpu.bogo_ops": 100, "cpu.bogo_ops_per_s": 50.5, "cpu.max_rss_bytes": 2048,
                            "vm.bogo_ops_per_s": 7}
    assert r["parameters"] == {"stressors": ["cpu", "vm"]}
    with pytest.raises(FormatError, match=r"^stress-ng-yaml: the output is not YAML \(.* at line \d+\); expected"):
        parse("stress-ng-yaml", "metrics:\n  - stressor: [cpu\n")


@pytest.mark.functional
def test_limits_on_samples_and_intervals(monkeypatch):
    monkeypatch.setattr(formats, "MAX_SAMPLES", 5)
    text = json.dumps({"results": [{"command": "x", "mean": 1.0, "times": [1.0] * 6}]})
    with pytest.raises(FormatError, match=r"^hyperfine-json: the output has more than 5 times, the most one"):
        parse("hyperfine-json", text)
    with pytest.raises(FormatError, match=r"^hyperfine-json: time 1 of command x is -1, not a number of seconds"):
        parse("hyperfine-json", json.dumps({"results": [{"command": "x", "mean": 1.0, "times": [1, -1]}]}))
    monkeypatch.setattr(formats, "MAX_INTERVALS", 2)
    text = json.dumps({"intervals": [{"sum": {"end": 1, "bits_per_second": 1}}] * 3,
                       "end": {"sum_sent": {"bits_per_second": 1}}})
    with pytest.raises(FormatError, match=r"^iperf3-json: the output has 3 intervals, more than the 2"):
        parse("iperf3-json", text)
