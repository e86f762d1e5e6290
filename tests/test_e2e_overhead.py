"""End to end, from campaign file to report: an obviously heavier load must show
up as a positive, significant overhead in the comparison, and in the report.

The measuring thread runs as SCHED_OTHER on CPU 0 while a SCHED_FIFO stress-ng
worker on the same CPU computes in bursts (50 % duty cycle): every wake-up that
falls in a burst waits for it to end, milliseconds instead of tens of
microseconds, so the effect is unmistakable even on a noisy shared machine.
Five repetitions per side are comfortably above the four an exact
Mann-Whitney test needs to reach p < 0.05.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from markupsafe import escape

from rtvbench.units import format_percent
from host_helpers import cli_env, latency_campaign, run_cli, run_report

REPS = 5


HOG = "chrt -f 90 stress-ng --cpu 1 --taskset 0 --cpu-load 50 --quiet"


def stress_ng_pids() -> set[str]:
    # This load's processes only, by their command line: a stress-ng someone else runs on the machine
    # (a peer tool of another test, a load beside the suite) may come and go meanwhile.
    return set(subprocess.run(["pgrep", "-f", HOG.removeprefix("chrt -f 90 ")], capture_output=True,
                              text=True).stdout.split())


@pytest.mark.skipif(shutil.which("stress-ng") is None, reason="stress-ng is installed by make setup")
def test_heavier_load_is_a_significant_positive_overhead(tmp_path, probe):
    before = stress_ng_pids()
    (tmp_path / "c.toml").write_text(latency_campaign("overhead", HOG, repetitions=REPS, duration_s=1,
                                                      interval_us=1000))
    env = cli_env(probe)
    ran = run_cli("run", "c.toml", "--store", "sqlite:///s.db", "--export-json", "report.json", cwd=tmp_path,
                  env=env, timeout=300)
    assert ran.returncode == 0, ran.stderr
    assert stress_ng_pids() <= before, "the load outlived the campaign"

    out = tmp_path / "report.json"
    assert f"JSON report: {out}" in ran.stdout
    doc = json.loads(out.read_text())
    by_figure = {c["figure"]: c for c in doc["comparisons"]
                 if c["axis"] == "load" and c["baseline"]["load"] == "idle" and c["candidate"]["load"] == "busy"}
    for figure in ("avg_us", "p99_us"):
        c = by_figure[figure]
        assert c["n_baseline"] == REPS and c["n_candidate"] == REPS
        assert c["overhead_percent"] > 0, c
        assert c["ci95_percent"][0] > 0, c          # the whole interval is above zero
        assert c["p_value"] < 0.05 and c["verdict"] == "significant", c

    text = run_report(ran)
    # The comparison table carries the same overhead and interval the JSON reports.
    p99 = by_figure["p99_us"]
    low, high = p99["ci95_percent"]
    for cell in (format_percent(p99["overhead_percent"]), f"{format_percent(low)} .. {format_percent(high)}"):
        assert f">{escape(cell)}</td>" in text, cell
    assert "significant" in text and "<svg" in text
