"""Which measurements may run at the same time (`rtvbench run --jobs`): the machine each target
occupies, the lanes joined from the machines every measurement involves, their order from the
seed, and `validate`'s schedule. Nothing is connected or run: a campaign is only read."""

from __future__ import annotations

import json

import pytest

from host_helpers import cli_env, run_cli
from rtvbench.campaign.plan import expected_seconds, involved_machines, lanes, plan, wall_seconds
from rtvbench.campaign.reader import CampaignError, parse_campaign
from rtvbench.targets.base import THIS_MACHINE

pytestmark = pytest.mark.functional

BOARDS = '''
[environments.b1]
target = "ssh"
host = "root@10.0.0.1"
[environments.b1admin]
target = "ssh"
host = "admin@10.0.0.1"
[environments.b2]
target = "ssh"
host = "10.0.0.2"
port = 2222
[environments.b2eth1]
target = "ssh"
host = "192.168.7.2"
machine = "10.0.0.2:2222"
[environments.b3]
target = "ssh"
host = "b3"
[environments.place]
target = "labgrid"
place = "rack-4"
coordinator = "lab:20408"
'''


def _campaign(tmp_path, environments: str, extra: str = "", head: str = "") -> object:
    (tmp_path / "vmlinuz").write_bytes(b"\0" * 64)
    return parse_campaign(f'name = "farm"\nrepetitions = 3\nseed = 11\n{head}{environments}\n'
                          '[benchmarks.wake]\nkind = "latency"\nduration_s = 1\n' + extra,
                          base_dir=tmp_path)


def _lanes(c) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    return [(lane.machines, lane.environments) for lane in lanes(c, plan(c))]


def test_each_target_says_its_machine(tmp_path):
    c = _campaign(tmp_path, '[environments.here]\ntarget = "local"\n[environments.vm]\ntarget = "qemu"\n'
                            'arch = "x86_64"\nkernel = "vmlinuz"\ncount = 2\n' + BOARDS)
    machines = {name: target.machine() for name, target in c.environments.items()}
    assert machines == {"here": THIS_MACHINE, "vm": THIS_MACHINE, "b1": "10.0.0.1", "b1admin": "10.0.0.1",
                        "b2": "10.0.0.2:2222", "b2eth1": "10.0.0.2:2222", "b3": "b3", "place": "place rack-4"}
    # A guest's neighbours run here too.
    assert {guest.machine() for guest in c.environments["vm"].neighbours} == {THIS_MACHINE}


def test_boards_sharing_a_machine_share_a_lane_and_guests_share_this_machine(tmp_path):
    c = _campaign(tmp_path, '[environments.here]\ntarget = "local"\n[environments.vm]\ntarget = "qemu"\n'
                            'arch = "x86_64"\nkernel = "vmlinuz"\n' + BOARDS)
    assert sorted(_lanes(c)) == [
        (("10.0.0.1",), ("b1", "b1admin")), (("10.0.0.2:2222",), ("b2", "b2eth1")), (("b3",), ("b3",)),
        (("place rack-4",), ("place",)), ((THIS_MACHINE,), ("here", "vm"))]


def test_a_load_where_joins_the_machines_it_runs_on(tmp_path):
    # A command load on board b3 while each environment measures: b3 is involved everywhere.
    c = _campaign(tmp_path, BOARDS, head='[loads.idle]\n[loads.far]\nkind = "command"\ncommand = "sleep 60"\n'
                                         'where = "b3"\n')
    [(machines, environments)] = _lanes(c)
    assert machines == ("10.0.0.1", "10.0.0.2:2222", "b3", "place rack-4")
    assert environments == ("b1", "b1admin", "b2", "b2eth1", "b3", "place")
    far = next(p for p in plan(c) if p.load == "far" and p.environment == "b1")
    assert involved_machines(c, far) == {"10.0.0.1", "b3"}
    idle = next(p for p in plan(c) if p.load == "idle" and p.environment == "b1")
    assert involved_machines(c, idle) == {"10.0.0.1"}


def test_a_round_trip_peer_joins_its_clients_lanes(tmp_path):
    # Every board measures round trips to b2's server: all boards meet on b2; the place stays apart.
    envs = BOARDS.replace('[environments.place]\ntarget = "labgrid"\nplace = "rack-4"\n'
                          'coordinator = "lab:20408"\n', "")
    c = _campaign(tmp_path, '[environments.here]\ntarget = "local"\n' + envs,
                  '[benchmarks.rtt]\nkind = "ipc"\npeer = "b2"\n')
    assert sorted(_lanes(c)) == [(("10.0.0.1", "10.0.0.2:2222", "b3", THIS_MACHINE),
                                  ("here", "b1", "b1admin", "b2", "b2eth1", "b3"))]


def test_a_disrupt_load_and_neighbour_loads_keep_to_the_guests_machine(tmp_path):
    # The neighbours a disrupt load power-cycles run here, as the measured guest does: one lane with
    # the local environment, apart from the board.
    c = _campaign(tmp_path, '[environments.here]\ntarget = "local"\n[environments.vms]\ntarget = "qemu"\n'
                            'arch = "x86_64"\nkernel = "vmlinuz"\ncount = 3\n[environments.b3]\ntarget = "ssh"\n'
                            'host = "b3"\n[environments.b3too]\ntarget = "ssh"\nhost = "b3"\nmachine = "b3"\n',
                  head='[loads.idle]\n[loads.reboots]\nkind = "disrupt"\n')
    vms = next(p for p in plan(c) if p.environment == "vms" and p.load == "reboots")
    assert involved_machines(c, vms) == {THIS_MACHINE}
    assert sorted(_lanes(c)) == [(("b3",), ("b3", "b3too")), ((THIS_MACHINE,), ("here", "vms"))]


def test_jobs_one_is_the_plan_and_lanes_keep_its_order(tmp_path):
    c = _campaign(tmp_path, '[environments.here]\ntarget = "local"\n' + BOARDS)
    planned = plan(c)
    found = lanes(c, planned)
    # Every measurement in exactly one lane, each lane in the seeded order, the lanes by first measurement.
    assert sorted(p.order_index for lane in found for p in lane.planned) == list(range(len(planned)))
    for lane in found:
        indexes = [p.order_index for p in lane.planned]
        assert indexes == sorted(indexes)
    firsts = [lane.planned[0].order_index for lane in found]
    assert firsts == sorted(firsts)
    # The same seed gives the same lanes in the same order; another seed another order within them.
    keys = [[p.key for p in lane.planned] for lane in found]
    assert [[p.key for p in lane.planned] for lane in lanes(c, plan(c))] == keys
    c.seed = 12
    assert [[p.key for p in lane.planned] for lane in lanes(c, plan(c))] != keys
    c.seed = 11
    # One job: the lanes one after another take what the plan takes; enough jobs: the longest lane.
    assert wall_seconds(c, found, 1) == pytest.approx(expected_seconds(c, planned))
    assert wall_seconds(c, found, 64) == pytest.approx(max(expected_seconds(c, lane.planned) for lane in found))


def test_jobs_one_runs_the_plan_as_before(tmp_path, monkeypatch):
    """--jobs 1 (the default) measures the whole plan in its order, in the calling thread."""
    from rtvbench.runner import run as run_module
    c = _campaign(tmp_path, '[environments.here]\ntarget = "local"\n' + BOARDS)
    seen: list[tuple] = []

    def measure(self, recorder, p, attempt, tick, among=None):
        seen.append((p.order_index, among))
        return "ok", None
    monkeypatch.setattr(run_module.Runner, "_measure", measure)
    runner = run_module.Runner(c, engine=None)
    assert runner.jobs == 1
    runner._measure_all(None, plan(c), {})
    assert seen == [(i, None) for i in range(len(plan(c)))]


def test_lanes_run_side_by_side_each_in_its_order(tmp_path, monkeypatch):
    from rtvbench.runner import run as run_module
    c = _campaign(tmp_path, '[environments.here]\ntarget = "local"\n' + BOARDS, head="jobs = 3\n")
    seen: list[tuple] = []

    def measure(self, recorder, p, attempt, tick, among=None):
        seen.append((p, among))
        return "ok", None
    monkeypatch.setattr(run_module.Runner, "_measure", measure)
    runner = run_module.Runner(c, engine=None)
    assert runner.jobs == 3 and run_module.Runner(c, engine=None, jobs=2).jobs == 2
    found = lanes(c, plan(c))
    runner._measure_lanes(None, found, {})
    assert sorted(p.order_index for p, _ in seen) == list(range(len(plan(c))))
    for lane in found:
        # Each measurement pauses and reaches again only its lane's environments.
        assert [p for p, among in seen if among == lane.environments] == lane.planned


def test_validate_prints_the_schedule(tmp_path):
    (tmp_path / "c.toml").write_text(f'name = "farm"\nrepetitions = 2\njobs = 2\n{BOARDS}\n'
                                     '[benchmarks.wait]\nkind = "command"\ncommand = "sleep 1"\n'
                                     'format = "hyperfine-json"\nexpected_s = 10\n')
    r = run_cli("validate", "c.toml", cwd=tmp_path, env=cli_env())
    assert r.returncode == 0, r.stderr
    # 12 measurements of 10.8 s; lanes of 4, 2, 4 and 2: two at once take 43.2 + 21.6 s.
    assert r.stdout.splitlines()[1:] == [
        "Schedule: 4 lane(s), up to 2 at once (--jobs): about 65 s, 2 min one measurement at a time.",
        "  lane 1: b1 on 10.0.0.1, b1admin on 10.0.0.1: 4 measurement(s), about 43 s",
        "  lane 2: b3 on b3: 2 measurement(s), about 22 s",
        "  lane 3: b2 on 10.0.0.2:2222, b2eth1 on 10.0.0.2:2222: 4 measurement(s), about 43 s",
        "  lane 4: place on place rack-4: 2 measurement(s), about 22 s"]
    r = run_cli("validate", "c.toml", "--json", "--jobs", "1", cwd=tmp_path, env=cli_env())
    assert r.returncode == 0, r.stderr
    schedule = json.loads(r.stdout)["schedule"]
    assert (schedule["jobs"], schedule["expected_seconds"], schedule["sequential_seconds"]) == (1, 129.6, 129.6)
    assert [(lane["machines"], lane["environments"], lane["measurements"], lane["expected_seconds"])
            for lane in schedule["lanes"]] == [
        (["10.0.0.1"], {"b1": "10.0.0.1", "b1admin": "10.0.0.1"}, 4, 43.2),
        (["b3"], {"b3": "b3"}, 2, 21.6),
        (["10.0.0.2:2222"], {"b2": "10.0.0.2:2222", "b2eth1": "10.0.0.2:2222"}, 4, 43.2),
        (["place rack-4"], {"place": "place rack-4"}, 2, 21.6)]
    r = run_cli("validate", "c.toml", "--jobs", "0", cwd=tmp_path, env=cli_env())
    assert r.returncode == 2 and "--jobs" in r.stderr


def test_jobs_in_the_campaign_is_checked(tmp_path):
    with pytest.raises(CampaignError) as e:
        _campaign(tmp_path, '[environments.here]\ntarget = "local"\n', head="jobs = 0\n")
    assert "jobs" in str(e.value.issue_lines())
    with pytest.raises(CampaignError) as e:
        _campaign(tmp_path, '[environments.b]\ntarget = "ssh"\nhost = "b"\nmachine = " "\n')
    assert "machine" in str(e.value.issue_lines())


def test_a_board_lost_for_good_stops_its_lane_only(tmp_path, monkeypatch):
    """A board that went away is reached again and its measurement retried in its own lane; one that
    cannot be reached again ends that lane, the others measure everything, and the run then fails as a
    run of one lane does (TargetError)."""
    from rtvbench.errors import TargetError
    from rtvbench.runner import run as run_module
    c = _campaign(tmp_path, BOARDS, head="jobs = 4\n")
    measured: list[tuple] = []
    reached: list[tuple] = []

    def measure(self, recorder, p, attempt, tick, among=None):
        measured.append((p.environment, p.repetition, attempt))
        if p.environment == "b3" or (p.environment == "b1" and p.repetition == 0 and attempt == 1):
            return "lost", "the board went away"
        return "ok", None

    def reconnect(self, among=None):
        reached.append(among)
        if "b3" in among:
            raise TargetError("board b3 does not answer.")
    monkeypatch.setattr(run_module.Runner, "_measure", measure)
    monkeypatch.setattr(run_module.Runner, "_reconnect", reconnect)
    runner = run_module.Runner(c, engine=None)
    found = lanes(c, plan(c))
    with pytest.raises(TargetError, match="board b3 does not answer"):
        runner._measure_lanes(None, found, {})
    # b1's lost measurement was retried as a second attempt after its lane alone was reached again.
    assert ("b1", 0, 2) in measured and ("b1", "b1admin") in reached
    assert all(among in {lane.environments for lane in found} for among in reached)
    # b3's lane stopped at its first measurement; every other lane measured all of its own.
    assert [m for m in measured if m[0] == "b3"] == [("b3", found[[lane.environments for lane in found]
                                                                .index(("b3",))].planned[0].repetition, 1)]
    for env in ("b1", "b1admin", "b2", "b2eth1", "place"):
        assert {m[1] for m in measured if m[0] == env} == {0, 1, 2}


def test_a_lane_pauses_only_its_own_guests(tmp_path):
    """Pausing the guests a measurement does not use stays within its lane: an environment of another
    lane may be measuring right then."""
    from types import SimpleNamespace

    from rtvbench.runner.run import Runner
    from rtvbench.targets.capabilities import Pausing

    class Guest(Pausing):
        def __init__(self, name: str) -> None:
            self.name, self.state = name, "running"

        def pause(self) -> None:
            self.state = "paused"

        def resume(self) -> None:
            self.state = "running"
    guests = {name: Guest(name) for name in ("mine", "idle_mine", "theirs")}
    runner = Runner(SimpleNamespace(environments=guests, jobs=2), engine=None)
    runner._focus({"mine"}, ("mine", "idle_mine"))
    assert {n: g.state for n, g in guests.items()} == {"mine": "running", "idle_mine": "paused", "theirs": "running"}
    runner._focus({"mine"})                 # one lane (jobs = 1): every other guest is paused
    assert {n: g.state for n, g in guests.items()} == {"mine": "running", "idle_mine": "paused", "theirs": "paused"}
