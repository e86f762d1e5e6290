"""The `disrupt` load: a neighbour guest rebooted, or killed and booted again, every few seconds
while the victim guest measures its wake-up latency.

Ground truth: the disrupted guest really restarted at every event — its kernel has a new boot_id
each time, none the one it had before the measurement — and without the load the guest's QEMU process
is the same before and after the measurement (the host-side samples name each guest's pid); events are at least `every_s` apart and each lasted at least its guest's boot; the
victim's windows are split between events and calm (every window is one or the other), and the
report and the JSON list every event with the victim's worst latency around it."""

from __future__ import annotations

import json
import os
import re

import pytest

from host_helpers import cli_env, run_cli, run_report
from rtvbench.loads.disrupt import achieved as disrupt
from rtvbench.loads.disrupt.achieved import DisruptEvent
from rtvbench.results import Measurement
from rtvbench.store import load_run, open_store
from test_qemu_target import _kernel, _needs_qemu

EVERY_S = 1.5


@pytest.fixture(scope="module")
def disrupted(probe, tmp_path_factory):
    _needs_qemu("x86_64")
    tmp = tmp_path_factory.mktemp("disrupt")
    (tmp / "c.toml").write_text(f"""
name = "disruption"
repetitions = 1
[environments.vms]
target = "qemu"
arch = "x86_64"
kernel = "{os.path.relpath(_kernel("x86_64"), tmp)}"
cpus = 1
count = 2
[loads.idle]
[loads.reboots]
kind = "disrupt"
every_s = {EVERY_S}
[loads.crashes]
kind = "disrupt"
action = "kill"
every_s = {EVERY_S}
[benchmarks.victim]
kind = "latency"
interval_us = 10000
duration_s = 5
window_s = 0.2
""")
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", "--export-json", "r.json", cwd=tmp,
                env=cli_env(probe), timeout=300)
    assert r.returncode == 0, r.stderr
    return load_run(open_store(f"sqlite:///{tmp}/s.db"), 1), json.loads((tmp / "r.json").read_text()), r


def _pids(m) -> tuple[int, int]:
    before, after = ({g["guest"]: g["pid"] for g in m.cpu_stat[phase]["guests"]}
                     for phase in ("host_before", "host_after"))
    return before[2], after[2]


def test_the_neighbour_really_restarts_and_events_are_spaced(disrupted):
    run, doc, _ = disrupted
    by_load = {m.load: m for m in run.measurements}
    assert all(m.status == "ok" for m in by_load.values()), [m.error for m in by_load.values()]
    before, after = _pids(by_load["idle"])
    assert before == after
    for load in ("reboots", "crashes"):
        m = by_load[load]
        (d,) = [x["disruption"] for x in doc["measurements"] if x["load"] == load]
        events = d["events"]
        boots = [r["boot_id"] for r in m.load_records[f"{load}@vms#2"] if r["type"] == "window"]
        assert len(set(boots)) == len(boots) == len(events) and None not in boots, boots
        assert 1 <= len(events) <= 4 and all(e["action"] == ("reboot" if load == "reboots" else "kill")
                                              for e in events), events
        assert events[0]["start_s"] >= EVERY_S * 0.95
        for e, nxt in zip(events, events[1:]):
            assert nxt["start_s"] - e["end_s"] >= EVERY_S * 0.95, events
        for e in events:
            assert e["end_s"] - e["start_s"] >= e["boot_s"] > 0.1, e
            assert e["windows"] >= 1 and e["victim_max_us"] is not None
        # Every victim window is either around an event or calm.
        windows = {(w["t_start_ns"], w["t_end_ns"]) for w in m.windows}
        around = sum(e["windows"] for e in events)
        assert d["calm_windows"] <= len(windows) <= around + d["calm_windows"], (len(windows), d)
    (idle,) = [x for x in doc["measurements"] if x["load"] == "idle"]
    assert idle["disruption"] is None


def test_the_report_lists_the_events_beside_the_victim(disrupted):
    _, _, r = disrupted
    page = run_report(r)
    assert "the victim while a neighbour guest was disrupted" in page
    assert "reboots@vms#2" in page and "crashes@vms#2" in page
    assert re.search(r"reboots@vms#2</code>: [1-9][0-9]* guest restarts? during the measurement", page), page


@pytest.mark.functional
def test_validate_refuses_disrupting_the_measured_guest(tmp_path, probe):
    (tmp_path / "c.toml").write_text('name = "d"\n[environments.native]\ntarget = "local"\n'
                                     '[loads.self]\nkind = "disrupt"\nwhere = "same"\n'
                                     '[benchmarks.w]\nkind = "latency"\nduration_s = 1\n')
    r = run_cli("validate", "c.toml", cwd=tmp_path, env=cli_env(probe))
    assert r.returncode == 2 and "a disrupt load power-cycles a guest beside the one measured" in r.stderr, r.stderr


# -- decoding a disrupt load's records (loads/disrupt/achieved.py) --------------------------------

def test_a_disrupt_event_is_only_a_disrupt_window():
    assert DisruptEvent.of({"type": "window", "kind": "cpu", "index": 0}) is None
    assert DisruptEvent.of({"type": "result", "kind": "disrupt"}) is None
    # the guest's boot is measured as a float of ns (QEMU's start to the probe's ready)
    e = DisruptEvent.of({"type": "window", "kind": "disrupt", "index": 2, "t_start_ns": 10, "t_end_ns": 90,
                         "action": "kill", "boot_ns": 812345678.5})
    assert (e.index, e.t_start_ns, e.t_end_ns, e.action, e.boot_ns) == (2, 10, 90, "kill", 812345678.5)
    bare = DisruptEvent.of({"type": "window", "kind": "disrupt"})
    assert (bare.index, bare.action, bare.boot_ns) == (0, "?", None)


def test_a_measurement_names_its_disrupt_loads_events():
    m = Measurement(1, "e", "l", "b", "latency", 0, "ok", [], [], None, None, None, [], load_records={
        "reboot@vm2": [{"type": "meta", "subcommand": "disrupt"},
                       {"type": "window", "kind": "disrupt", "index": 0, "t_start_ns": 1, "t_end_ns": 2}],
        "cpu50": [{"type": "window", "kind": "cpu", "index": 0}]})
    assert [(name, e.index) for name, e in disrupt.events(m)] == [("reboot@vm2", 0)]
    assert disrupt.ran_beside(m) and not disrupt.ran_beside(Measurement(
        2, "e", "l", "b", "latency", 0, "ok", [], [], None, None, None, [], load_records={"cpu50": []}))
