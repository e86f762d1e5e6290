"""Malformed and hostile probe streams, generated from real probe output with a fixed seed: every
line is either accepted — and then every kind's decoder reads it without an exception — or refused
with a ProbeOutputError naming the line. Never another exception (an internal error of the runner),
and nothing of a refused line is stored. End to end, a hostile record fails its measurement with one
clear sentence, the campaign goes on, and the run reports."""

from __future__ import annotations

import copy
import json
import random
import resource
import sqlite3
import subprocess
import time

import pytest

from host_helpers import FAKE_PROBE, cli_env, run_cli
from rtvbench.analysis.kind import get_kind
from rtvbench.errors import ProbeOutputError
from rtvbench.probe.stream import ProbeStream
from rtvbench.results import Measurement

pytestmark = pytest.mark.functional

SEED = 20261123
CASES = 400
HOSTILE = ["20", 10**400, -5, -(2**70), 1.5e308 * 10, [], {}, {"type": ["result"]}, "x", None, True,
           [1], [5, 2, 1], ["a", 1, 2], [[1, 2]], {"0": "a"}, "\x1b]0;owned\x07"]
NAN_TEXT = ["NaN", "Infinity", "-Infinity"]


@pytest.fixture(scope="module")
def streams(probe):
    """Real output of the subcommands whose records the analysis reads."""
    runs = {
        "latency": ["latency", "--loops", "300", "--interval-us", "200", "--policy", "other", "--threshold-us", "50",
                    "--window-s", "0.02", "--work-us", "20"],
        "noise": ["noise", "--duration-s", "0.05", "--cpus", "0", "--policy", "other"],
        "mem-lat": ["mem-lat", "--sizes", "4096,65536", "--mode", "random", "--quick"],
        "ipc": ["ipc", "--transport", "pipe", "--sizes", "16", "--count", "200"],
        "work": ["work", "--kernels", "crc32,fft", "--size", "small", "--repetitions", "1"],
    }
    out = {}
    for kind, argv in runs.items():
        p = subprocess.run([str(probe), *argv], capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        out[kind] = p.stdout.splitlines()
    return out


def _consume(kind: str, lines: list[str]) -> str:
    """"accepted" when every line passed and the kind decoded the records, "refused" on a
    ProbeOutputError; any other exception fails the test."""
    stream = ProbeStream("fuzzed output")
    records = []
    try:
        for line in lines:
            records.append(stream.feed(line))
    except ProbeOutputError as e:
        assert "line" in str(e) and "\n" not in str(e)
        return "refused"
    m = Measurement(id=1, environment="e", load="l", benchmark="b", kind=kind, repetition=0, status="ok",
                    command=[], load_commands=[], started_at=None, finished_at=None,
                    meta=next((r for r in records if r["type"] == "meta"), None),
                    results=[r for r in records if r["type"] == "result"],
                    windows=[r for r in records if r["type"] == "window"],
                    warnings=[r for r in records if r["type"] == "warning"])
    result = get_kind(kind).decode(m)
    for h in list(result.distributions.values()) + list(result.cpu_distributions.values()):
        h.percentile(99), h.ccdf()
    return "accepted"


def _mutate(rng: random.Random, lines: list[str]) -> list[str]:
    lines = list(lines)
    i = rng.randrange(len(lines))
    record = json.loads(lines[i])
    how = rng.randrange(6)
    if how == 0:                                    # a field of some object gets a hostile value
        objects = [record] + [v for v in record.values() if isinstance(v, dict)]
        target = rng.choice(objects)
        key = rng.choice(sorted(target) or ["count"])
        value = rng.choice(HOSTILE + NAN_TEXT)
        if value in NAN_TEXT:
            target[key] = "__NAN__"
            lines[i] = json.dumps(record).replace('"__NAN__"', value)
            return lines
        target[key] = copy.deepcopy(value)
    elif how == 1:                                  # extremes swapped
        for obj in [record] + [v for v in record.values() if isinstance(v, dict)]:
            if "min_ns" in obj and "max_ns" in obj:
                obj["min_ns"], obj["max_ns"] = (obj["max_ns"] or 0) + 7, obj["min_ns"]
    elif how == 2:                                  # garbage histogram buckets
        hist = record.get("histogram") or {}
        if hist.get("buckets"):
            hist["buckets"][rng.randrange(len(hist["buckets"]))] = rng.choice(HOSTILE[:14])
        else:
            record["histogram"] = rng.choice(HOSTILE)
    elif how == 3:                                  # deep nesting
        lines[i] = json.dumps(record)[:-1] + ', "deep": ' + "[" * 5000 + "]" * 5000 + "}"
        return lines
    elif how == 4:                                  # one enormous line
        record["padding"] = "x" * (5 << 20)
    else:                                           # not a record at all
        lines[i] = rng.choice(['[1, 2]', '"result"', "", "{", '{"type": ["result"]}', "\x00\x01"])
        return lines
    lines[i] = json.dumps(record)
    return lines


def test_real_output_of_every_subcommand_is_accepted(streams):
    for kind, lines in streams.items():
        assert _consume(kind, lines) == "accepted", kind


def test_fuzzed_streams_are_accepted_and_decoded_or_refused_with_the_line(streams):
    rng = random.Random(SEED)
    # This process's CPU time, not the wall clock: other processes on the machine stretch the latter,
    # while a pathological case (a quadratic parse of the enormous line, say) shows in both. About 1 s
    # for the 400 streams here.
    start = time.process_time()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    outcome = {"accepted": 0, "refused": 0}
    worst = 0.0
    for _ in range(CASES):
        kind = rng.choice(sorted(streams))
        one = time.process_time()
        outcome[_consume(kind, _mutate(rng, streams[kind]))] += 1
        worst = max(worst, time.process_time() - one)
    assert outcome["refused"] > CASES // 2 and outcome["accepted"] > 0, outcome
    assert time.process_time() - start < 60
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
    assert grown_mb < 500, grown_mb
    print(f"probe stream fuzz: {CASES} streams, {outcome}, worst {worst:.3f} s of CPU, "
          f"peak memory grown by {grown_mb:.0f} MB")


HOSTILE_RECORDS = [
    ('{"type": "result", "cpu": "all", "count": "20", "min_ns": 1, "max_ns": 2}',
     "`count` must be a count (an integer >= 0), not \"20\""),
    ('{"type": "result", "cpu": "all", "count": 1, "min_ns": 9, "max_ns": 2}', "`min_ns` 9 is above `max_ns` 2"),
    ('{"type": "result", "cpu": "all", "count": 1, "avg_ns": NaN}', "NaN is not a number JSON allows"),
    ('{"type": "result", "cpu": "all", "count": 1, "max_ns": 1' + "0" * 400 + "}", "`max_ns` is an integer of 401 digits"),
    ('{"type": "result", "cpu": "all", "deep": ' + "[" * 5000 + "]" * 5000 + "}", "nested more than 12 levels deep"),
]
META = json.dumps({"type": "meta", "schema": 1, "subcommand": "latency", "params": {}, "argv": []})


@pytest.mark.parametrize("line,said", HOSTILE_RECORDS)
def test_a_hostile_record_is_refused_with_its_line_and_rule(line, said):
    stream = ProbeStream("probe output of native/idle/wakeup #1")
    stream.feed(META)
    with pytest.raises(ProbeOutputError) as e:
        stream.feed(line)
    assert str(e.value).startswith("probe output of native/idle/wakeup #1, line 2: " + said), str(e.value)


def test_a_hostile_record_fails_its_measurement_and_the_run_reports(tmp_path):
    """End to end, through the runner and the store, with one of them."""
    line, said = HOSTILE_RECORDS[1]
    (tmp_path / "c.toml").write_text('name = "hostile"\n[environments.native]\ntarget = "local"\n'
                                     '[benchmarks.wakeup]\nkind = "latency"\nloops = 10\n')
    env = cli_env(FAKE_PROBE, FAKE_PROBE_MODE=f"hostile:{line}")
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=env)
    assert r.returncode == 3 and "internal error" not in r.stderr, r.stderr
    with sqlite3.connect(tmp_path / "s.db") as conn:
        [(status, error)] = conn.execute("select status, error from measurements").fetchall()
        stored = [t for (t,) in conn.execute("select type from records")]
    assert status == "error" and error.startswith("probe output of native/idle/wakeup #1, line 2: " + said), error
    assert stored == ["meta"]                       # nothing of the refused line
    r = run_cli("report", "--store", "sqlite:///s.db", "--format", "html", cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr


def test_records_stored_before_they_were_checked_do_not_stop_the_report():
    from synthetic_runs import typical_run
    from rtvbench.report import render

    run = typical_run()
    bad = run.measurements[0]
    bad.results[-1]["over"] = {"100000": "many"}           # what an unchecked probe could have stored
    bad.results[-1]["histogram"] = {"scheme": "log-linear", "buckets": [["a", 1, 2]]}
    doc = json.loads(render(run, "json"))
    assert [m["figures"] for m in doc["measurements"] if m["id"] == bad.id] == [{}]
    said = [f["text"] for f in doc["findings"]["wakeup"] if "could not be read" in f["text"]]
    assert len(said) == 1 and "Repetition 1 in `native` under `idle`" in said[0], said
    assert "<html" in render(run, "html")
