"""Probe output parsing: what does not follow docs/probe-output.md is refused with a
clear error naming the line, and the CLI never shows a traceback for it."""

from __future__ import annotations

import json
import sqlite3

import pytest

from host_helpers import FAKE_PROBE, cli_env, run_cli
from rtvbench.errors import ProbeOutputError
from rtvbench.probe.stream import ProbeStream

META = json.dumps({"type": "meta", "schema": 1, "subcommand": "latency"})


def feed_all(lines: list[str]) -> ProbeStream:
    s = ProbeStream("probe output")
    for line in lines:
        s.feed(line)
    return s


def test_conforming_stream_is_accepted():
    s = feed_all([META, '{"type": "warning", "code": "no_rt_policy", "message": "m"}',
                  '{"type": "window", "cpu": 0}', '{"type": "result", "cpu": "all"}',
                  '{"type": "end", "status": "ok", "elapsed_ns": 5}'])
    assert (s.count, s.results, s.end["status"], s.meta["schema"]) == (5, 1, "ok", 1)


@pytest.mark.parametrize("lines,message", [
    ([META, "Segmentation fault"],
     "probe output, line 2: not a JSON object (got 'Segmentation fault')"),
    ([META, "[1, 2]"], "probe output, line 2: not a JSON object (got '[1, 2]')"),
    ([META, '{"type": "histogram"}'], "probe output, line 2: unknown record type 'histogram'"),
    (['{"type": "meta", "schema": 2}'],
     "probe output, line 1: schema 2 is not the schema 1 this rtvbench understands"),
    (['{"type": "meta"}'], "probe output, line 1: schema None is not the schema 1"),
    (['{"type": "result", "cpu": 0}'], "probe output, line 1: the first record must be `meta`"),
    ([META, '{"type": "end", "status": "ok"}', '{"type": "result"}'],
     "probe output, line 3: a record after `end`"),
    ([META, '{"type": "end", "status": "fine"}'], "probe output, line 2: unknown end status 'fine'"),
])
def test_nonconforming_line_is_named(lines, message):
    with pytest.raises(ProbeOutputError) as exc:
        feed_all(lines)
    assert str(exc.value).startswith(message), str(exc.value)
    assert str(exc.value).endswith("rebuild the probe with `make probe` so that it matches this rtvbench.")


def test_long_line_is_excerpted():
    with pytest.raises(ProbeOutputError) as exc:
        feed_all([META, "x" * 5000])
    assert len(str(exc.value)) < 300


CAMPAIGN = """
name = "fake"
repetitions = 2
[environments.native]
target = "local"
[benchmarks.wakeup]
kind = "latency"
duration_s = 1
"""


def _measurements(db):
    with sqlite3.connect(db) as conn:
        return conn.execute("select status, error from measurements order by id").fetchall()


@pytest.mark.parametrize("mode,error", [
    ("garbage", "probe output of native/idle/wakeup #1, line 2: not a JSON object "
                "(got 'Segmentation fault (core dumped)')"),
    ("exit1", "the probe exited with status 1: rtvb-probe latency: cannot lock memory."),
    ("error", "the probe reported an error: clock_nanosleep failed: Invalid argument"),
])
def test_bad_probe_output_fails_the_measurement_not_the_tool(tmp_path, mode, error):
    (tmp_path / "c.toml").write_text(CAMPAIGN)
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path,
                env=cli_env(FAKE_PROBE, FAKE_PROBE_MODE=mode))
    assert "Traceback" not in r.stderr
    # Every measurement failed: the environment is at fault (exit 3), and each error is stored.
    assert r.returncode == 3, r.stderr
    assert "no measurement of run 1 succeeded" in r.stderr
    rows = _measurements(tmp_path / "s.db")
    assert len(rows) == 2 and {s for s, _ in rows} == {"error"}
    assert any(e.startswith(error.replace("#1", f"#{i}")) for i in (1, 2) for _, e in rows), rows


def test_unknown_schema_from_sysinfo_is_a_target_failure(tmp_path):
    (tmp_path / "c.toml").write_text(CAMPAIGN)
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path,
                env=cli_env(FAKE_PROBE, FAKE_PROBE_MODE="schema2"))
    assert r.returncode == 3
    [line] = r.stderr.strip().splitlines()
    assert line.startswith("rtvbench: `rtvb-probe sysinfo` in environment native, line 1: schema 2 "
                           "is not the schema 1 this rtvbench understands (got '{")
    assert line.endswith("rebuild the probe with `make probe` so that it matches this rtvbench.")


def test_missing_probe_is_a_target_failure(tmp_path):
    (tmp_path / "c.toml").write_text(CAMPAIGN)
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path,
                env=cli_env(tmp_path / "no-probe"))
    assert r.returncode == 3
    assert r.stderr.strip() == (f"rtvbench: RTVBENCH_PROBE={tmp_path / 'no-probe'} is not an executable "
                                "file: point it at a built rtvb-probe or unset it.")
    # Nothing was started, so nothing was written.
    with sqlite3.connect(tmp_path / "s.db") as conn:
        assert conn.execute("select count(*) from runs").fetchone() == (0,)
