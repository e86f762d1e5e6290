"""The `sched` load (pairs of threads passing messages over pipes) from the campaign file to the
report: its keys and probe command, its achieved figures and phrase, and a run under it. The
probe's side (message conservation, the round trip against the probe's own pipe round trip) is in
test_probe_load.py."""

from __future__ import annotations

import json

import pytest

from host_helpers import cli_env, run_cli
from rtvbench.analysis.load_achieved import describe, load_achieved
from rtvbench.campaign.reader import CampaignError, parse_campaign

CAMPAIGN = """
name = "sched"
repetitions = 1

[environments.native]
target = "local"

[loads.idle]

[loads.pingpong]
kind = "sched"
workers = 2
msg_size = "64"
cpus = [1]
window_s = 0.2

[benchmarks.wakeup]
kind = "latency"
interval_us = 1000
duration_s = 0.5
policy = "other"
cpus = [0]
"""


def test_the_sched_load_is_a_probe_command():
    c = parse_campaign(CAMPAIGN, "sched.toml")
    assert c.loads["pingpong"].commands() == [
        "rtvb-probe load --kind sched --workers 2 --cpus 1 --window-s 0.2 --msg-size 64"]


def test_a_message_larger_than_a_pipe_writes_atomically_is_refused():
    with pytest.raises(CampaignError) as e:
        parse_campaign(CAMPAIGN.replace('msg_size = "64"', 'msg_size = "8K"'), "sched.toml")
    assert str(e.value) == 'sched.toml:13: loads.pingpong.msg_size: must be a size from 1 to 4K (got "8K")'


def test_what_a_sched_load_achieved_is_said_in_round_trips_and_wake_ups():
    a = load_achieved("pingpong", [
        {"type": "meta", "params": {"kind": "sched", "msg_size_bytes": 64, "transport": "pipe"}},
        {"type": "result", "kind": "sched", "elapsed_ns": 10**9, "achieved_ops_per_s": 200000.0, "ops": 200000,
         "answered": 200001, "achieved_percent": 50.0, "workers": []}])
    assert a.extra["answered"] == 200001
    assert describe(a, quote=False) == "pingpong: 200,000 round trips/s (400,000 wake-ups/s)"
    idle = load_achieved("pingpong", [{"type": "meta", "params": {"kind": "sched"}},
                                      {"type": "result", "kind": "sched", "achieved_ops_per_s": 0.0, "ops": 0,
                                       "answered": 0, "workers": []}])
    assert idle.nothing


@pytest.mark.functional
def test_a_latency_run_under_the_sched_load_reports_what_it_achieved(tmp_path, probe):
    (tmp_path / "c.toml").write_text(CAMPAIGN)
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", "--export-json", "report.json", cwd=tmp_path,
                env=cli_env(probe), timeout=240)
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "report.json").read_text())
    [cell] = [c for c in doc["load_cells"] if c["load"] == "pingpong"]
    [a] = cell["achieved"]
    assert a["kind"] == "sched" and a["achieved_ops_per_s"] > 0 and not a["achieved_nothing"]
    assert cell["achieved_text"].startswith("pingpong: ") and "round trips/s" in cell["achieved_text"]
