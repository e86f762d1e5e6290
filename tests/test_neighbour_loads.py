"""`where = "neighbours"`: in a multi-guest environment (qemu with count = N) the benchmark runs in
the first guest and the load in each of the others, one instance per guest, every instance's
records kept apart; a single guest has no neighbours, so the same load is no load there (the
1-VM point of latency against the number of VMs). The guests here are stand-ins: local targets, so the test
needs no QEMU; the qemu target's own tests boot real neighbours."""

from __future__ import annotations

import pytest
from rich.console import Console

from rtvbench.campaign.reader import parse_campaign
from rtvbench.campaign.reader import CampaignError
from rtvbench.runner.run import Runner
from rtvbench.store import load_run, open_store
from rtvbench.targets.base import TARGETS
from rtvbench.targets.capabilities import Pausing
from rtvbench.targets.local import LocalParams, LocalTarget


class GroupParams(LocalParams):
    count: int = 1


class GroupTarget(LocalTarget, Pausing):
    """`count` stand-in guests, all on this machine: the first measured, the others neighbours."""

    kind = "test-group"
    Params = GroupParams

    state: dict[str, str] = {}                  # environment -> "running" | "paused"
    seen: list[tuple[str, dict[str, str]]] = []  # (measured environment, every state) per benchmark run

    def __init__(self, name, params):
        super().__init__(name, params)
        self.neighbours = [LocalTarget(f"{name}#{i}", LocalParams()) for i in range(2, params.count + 1)]
        GroupTarget.state[name] = "running"

    def pause(self):
        GroupTarget.state[self.name] = "paused"

    def resume(self):
        GroupTarget.state[self.name] = "running"

    def run(self, argv, on_line, deadline=None):
        if "latency" in argv:
            GroupTarget.seen.append((self.name, dict(GroupTarget.state)))
        return super().run(argv, on_line)


@pytest.fixture(autouse=True)
def registered():
    """The stand-in target kind exists only during this module's tests (other tests list the
    supported kinds)."""
    TARGETS.register("test-group")(GroupTarget)
    yield
    TARGETS.unregister("test-group")


CAMPAIGN = """
name = "nvm"
repetitions = 1
seed = 1

[environments.vm1]
target = "test-group"
count = 1
[environments.vm3]
target = "test-group"
count = 3

[loads.hog]
kind = "cpu"
percent = 30
workers = 1
period_ms = 10
where = "neighbours"

[benchmarks.wakeup]
kind = "latency"
interval_us = 1000
duration_s = 0.4
policy = "other"
cpus = [0]
"""


def test_a_neighbours_load_runs_once_in_every_other_guest(tmp_path, monkeypatch, probe):
    monkeypatch.setenv("RTVBENCH_PROBE", str(probe))
    engine = open_store(f"sqlite:///{tmp_path}/s.db")
    outcome = Runner(parse_campaign(CAMPAIGN, "nvm.toml"), engine, Console(quiet=True)).run()
    r = load_run(engine, outcome.run_id)
    by_env = {m.environment: m for m in r.measurements}
    assert {m.status for m in r.measurements} == {"ok"}
    # 3 guests: the load ran in guests 2 and 3, each with its own complete record stream ...
    loads = by_env["vm3"].load_records
    assert sorted(loads) == ["hog@vm3#2", "hog@vm3#3"]
    for name, recs in loads.items():
        types = [x["type"] for x in recs]
        assert types[0] == "meta" and types[-1] == "end" and "result" in types, (name, types)
        [res] = [x for x in recs if x["type"] == "result"]
        # ... and did its work: a 30 % duty cycle measured from its own CPU time.
        assert 15 <= res["achieved_percent"] <= 45, res
    # 1 guest: no neighbour, no load, the benchmark ran alone.
    assert by_env["vm1"].load_records == {}


def test_neighbours_is_a_valid_where_and_other_names_still_are_checked():
    bad = CAMPAIGN.replace('where = "neighbours"', 'where = "neighbors"')
    with pytest.raises(CampaignError) as e:
        parse_campaign(bad, "nvm.toml")
    assert "neighbours" in str(e.value.issues[0].message)


def test_only_the_measured_environment_runs(tmp_path, monkeypatch, probe):
    """Guests of the environments a measurement does not use are paused (an idle TCG guest still
    takes host CPU), and resumed when their turn comes."""
    monkeypatch.setenv("RTVBENCH_PROBE", str(probe))
    GroupTarget.seen.clear()
    engine = open_store(f"sqlite:///{tmp_path}/s.db")
    Runner(parse_campaign(CAMPAIGN.replace("repetitions = 1", "repetitions = 2"), "nvm.toml"), engine,
           Console(quiet=True)).run()
    assert sorted(env for env, _ in GroupTarget.seen) == ["vm1", "vm1", "vm3", "vm3"]
    for measured, state in GroupTarget.seen:
        assert state == {"vm1": "paused", "vm3": "paused", measured: "running"}, (measured, state)
