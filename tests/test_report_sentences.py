"""Sentences of the report that must say what was asked and observed, never more: each test builds
the run a real campaign made and reads what the evaluation (and the report) says of it; and a campaign
key whose meaning would differ between targets is refused before anything runs."""

from __future__ import annotations

import copy
import json
from types import SimpleNamespace

import pytest

from host_helpers import cli_env, run_cli
from rtvbench.analysis.evaluation import evaluate_run
from rtvbench.analysis.kind import get_kind
from rtvbench.analysis.load_achieved import definition_words
from rtvbench.cli import main
from rtvbench.kinds.latency.decode import _spike_sentences
from rtvbench.kinds.latency.spikes import CellSpikes
from rtvbench.records import HealthCheck
from rtvbench.report import render
from rtvbench.spec import LoadSpec
from rtvbench.store import load_run, open_store
from tests.synthetic_runs import DEFAULT_CAMPAIGN, build_run, lognormal_latency

pytestmark = pytest.mark.functional


def _normal_policy_run_as_root():
    campaign = copy.deepcopy(DEFAULT_CAMPAIGN)
    campaign["benchmarks"]["wakeup"] = {"kind": "latency", "interval_us": 200, "duration_s": 10,
                                        "policy": "other"}
    run = build_run(campaign, repetitions=3, samples=500)
    for m in run.measurements:
        # What a probe's meta without its params says of a run at policy other: rt_granted false.
        m.meta = {"type": "meta", "privileges": {"policy": "other", "priority": 0, "rt_granted": False,
                                                 "mlockall": True, "euid": 0}}
    run.fingerprint_meta = {env: {"type": "meta", "privileges": {"euid": 0}} for env in run.fingerprints}
    return run


def test_a_normal_policy_run_as_root_reports_no_refused_real_time_priority():
    ev = evaluate_run(_normal_policy_run_as_root())
    assert [w.code for w in ev.run_parts.preflight if w.code == "no_rt_priority"] == []
    row = next(r for r in ev.run_parts.fingerprints.rows if r.label == "Probe privileges")
    assert row.values == ["root", "root"]
    assert all(ev.cell(env, load, "wakeup").rt_granted is None for env, load in ev.data.cells("wakeup"))


def test_an_ipc_benchmark_with_a_peer_names_the_peer_and_its_transport():
    ipc = get_kind("ipc")
    said = ipc.describe({"peer": "guest", "transports": ["udp"]}, {"sizes_bytes": [64]})
    assert "between a client in the measured environment and a server rtvbench starts in `guest`, over udp" in said
    assert "two processes of this environment" not in said
    assert "memory region the two share" in ipc.describe({"peer": "host", "transports": ["shm"]}, None)
    alone = ipc.describe({"transports": ["pipe", "unix"]}, None)
    assert alone.startswith("Ping-pong round trips between two processes of this environment over pipe, unix")


def test_the_disrupt_load_is_defined_as_the_runner_restarting_guests_not_as_a_probe_generator():
    neighbours = LoadSpec("restarts", "disrupt", {"every_s": 3.0, "action": "kill"}, where="neighbours")
    said = definition_words(neighbours)
    assert said == ("rtvbench itself: each of the other guests of the measured environment killed and booted "
                    "again every 3 s during the measurement, from a thread of the runner (nothing runs in a guest)")
    rebooted = definition_words(LoadSpec("restarts", "disrupt", {"every_s": 2.0, "action": "reboot"},
                                         where="neighbours"))
    assert "environment rebooted every 2 s" in rebooted and "probe load generator" not in rebooted


def _soak_of_rounds(rounds: int):
    campaign = copy.deepcopy(DEFAULT_CAMPAIGN)
    campaign["repetitions"] = 1
    run = build_run(campaign, distributions={("native", "idle"): lognormal_latency(2_000)},
                    repetitions=rounds, samples=300)
    run.health = [HealthCheck("native", run.started_at, None, True, None, 1000, ())]
    return run


def test_a_soak_report_says_its_rounds_not_the_campaigns_one_repetition():
    run = _soak_of_rounds(9)
    md = render(run, "md")
    assert "- **Rounds:** 9 (every cell measured once per round)" in md
    assert "**Repetitions:**" not in md and "1 repetitions" not in md
    assert "A soak of 9 rounds, each measuring every environment and load once." in md
    assert json.loads(render(run, "json"))["run"]["rounds"] == 9
    assert "A soak of 1 round," in render(_soak_of_rounds(1), "md")
    ordinary = render(build_run(samples=300), "md")
    assert "- **Repetitions:** 5" in ordinary and "**Rounds:**" not in ordinary


def test_the_boot_benchmark_says_how_a_boot_is_timed_before_its_command():
    campaign = copy.deepcopy(DEFAULT_CAMPAIGN)
    campaign["benchmarks"] = {"boot": {"kind": "boot"}}
    run = build_run(campaign, distributions={("guest", "idle"): lognormal_latency(2_000)}, repetitions=2,
                    samples=50, benchmark="boot")
    for m in run.measurements:
        m.kind, m.command, m.meta = "boot", ["/init", "sysinfo"], {"type": "meta", "subcommand": "boot"}
        m.results = [{"type": "result", "total_ns": 4e9, "to_kernel_ns": 1e9, "kernel_ns": 2e9, "init_ns": 1e9}]
    md = render(run, "md")
    how = md[md.index("How to measure"):md.index("Result", md.index("How to measure"))]
    assert "power cycle" in how and "from QEMU's start to the first record the guest's probe prints" in how
    assert how.index("power cycle") < how.index("/init sysinfo")
    html = render(run, "html")
    assert "from QEMU&#39;s start to the first record" in html or "from QEMU's start to the first record" in html


RELATIVE_DIRS = """\
name = "relative"
[environments.native]
target = "local"
[loads.disk]
kind = "io"
dir = "scratch"
[benchmarks.os]
kind = "os"
dir = "files/here"
"""


def test_a_relative_directory_of_a_load_or_benchmark_is_refused_by_validate_naming_the_key(tmp_path, capsys,
                                                                                           monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.toml").write_text(RELATIVE_DIRS)
    with pytest.raises(SystemExit) as exc:
        main(["validate", "c.toml"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "Traceback" not in err
    why = ("must be an absolute path in the environment it is used in: a relative one would depend on the "
           "directory each target starts the probe in; write it from / ")
    assert f'c.toml:6: loads.disk.dir: {why}(e.g. "/tmp/scratch") (got "scratch")' in err.splitlines()
    assert f'c.toml:9: benchmarks.os.dir: {why}(e.g. "/tmp/files/here") (got "files/here")' in err.splitlines()
    (tmp_path / "c.toml").write_text(RELATIVE_DIRS.replace('"scratch"', '"/tmp"').replace('"files/here"', '"/tmp"'))
    with pytest.raises(SystemExit) as exc:
        main(["validate", "c.toml"])
    assert exc.value.code == 0


_STATES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def _stat(busy: dict[str, int] | None = None) -> dict[str, dict[str, int]]:
    """/proc/stat counters of 2 CPUs: all 0, or after 100 ticks each of which `busy` were user time."""
    per_cpu = {f"cpu{c}": {**dict.fromkeys(_STATES, 0), **({"user": b, "idle": 100 - b} if busy else {})}
               for c, b in (busy or {"0": 0, "1": 0}).items()}
    return {"cpu": {k: sum(v[k] for v in per_cpu.values()) for k in _STATES}, **per_cpu}


def test_the_round_trip_server_rtvbench_runs_in_the_measured_environment_is_not_foreign_load():
    campaign = copy.deepcopy(DEFAULT_CAMPAIGN)
    campaign["environments"] = {"guest": DEFAULT_CAMPAIGN["environments"]["guest"]}
    campaign["loads"] = {"idle": {}}
    campaign["benchmarks"] = {"rt": {"kind": "ipc", "peer": "guest", "transports": ["tcp"], "sizes": [64]}}
    run = build_run(campaign, distributions={("guest", "idle"): lognormal_latency(2_000)}, repetitions=3,
                    samples=50, benchmark="rt")
    for m in run.measurements:
        # An otherwise idle guest of 2 vCPUs over 1 s: the client took half a CPU, the server as much.
        m.cpu_stat = {"before": _stat(), "after": _stat({"0": 60, "1": 40})}
        m.end = {"type": "end", "status": "ok", "elapsed_ns": 1_000_000_000, "cpu_time_ns": 500_000_000}
    ev = evaluate_run(run)
    assert not ev.cell("guest", "idle", "rt").conditions.ok          # without the server's word: 25 % foreign
    for m in run.measurements:
        m.cpu_stat["peer_server"] = {"status": "ok", "elapsed_ns": 1_000_000_000, "cpu_time_ns": 480_000_000,
                                     "pid": 4242}
        m.__dict__.pop("peer_server_end", None)
    ev = evaluate_run(run)
    cell = ev.cell("guest", "idle", "rt").conditions
    assert cell.ok, cell.reason()
    assert all(ev.around(m).conditions.foreign_percent == pytest.approx(1.0) for m in run.measurements)


def test_the_runner_keeps_the_servers_own_time_in_the_peers_own_cell_only(tmp_path, probe):
    (tmp_path / "c.toml").write_text("""\
name = "peer-own"
repetitions = 2
[environments.native]
target = "local"
[environments.other]
target = "local"
[loads.idle]
[benchmarks.rt]
kind = "ipc"
peer = "native"
transports = ["tcp"]
sizes = [64]
count = 200
""")
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=cli_env(probe), timeout=300)
    assert r.returncode == 0, r.stderr
    run = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), 1)
    own = [m for m in run.measurements if m.environment == "native"]
    assert len(own) == 2 and all(m.status == "ok" for m in run.measurements)
    for m in own:
        assert m.peer_server_end.status == "ok" and m.peer_server_end.cpu_time_ns > 0
        assert m.peer_server_pid not in (None, m.meta["pid"])
    # Measuring `other`, the server ran elsewhere: nothing of it is the measured environment's.
    assert all(m.peer_server_end is None for m in run.measurements if m.environment == "other")


def test_a_count_of_one_agrees_with_its_noun_across_the_report():
    campaign = copy.deepcopy(DEFAULT_CAMPAIGN)
    campaign["repetitions"] = 1
    run = build_run(campaign, distributions={("native", "idle"): lognormal_latency(2_000)}, repetitions=1,
                    samples=400)
    for r in run.measurements[0].results:
        r["missed"] = 1 if r["cpu"] == "all" else 0
    md = render(run, "md")
    assert ("In `native` under `idle`, 1 period was missed entirely (a wake-up later than a whole interval) in "
            "1 of 1 repetition.") in md
    assert "the median over 1 repetition is" in md
    assert "1 repetition per environment and load" in md
    assert not any(bad in md for bad in ("1 period were", "1 repetitions", "of 1 measurements"))
    assert "10 periods were missed" in render(_missing(10), "md")
    assert get_kind("ipc").describe({}, {"count": 1}).count("per transport and size, 1 round trip after") == 1
    one = [CellSpikes("native", "idle", [SimpleNamespace(cause="irq-off", group=None)], 1, 1),
           CellSpikes("native", "cpu50", [], 1, 1)]
    assert _spike_sentences(one, []) == [
        "`native` under `idle`: 1 traced spike: 1 interrupt-disabled stretch; 1 more breach was not traced.",
        "`native` under `cpu50`: 1 wake-up exceeded the trace threshold but none was traced (see the probe's "
        "warnings)."]


def _missing(periods: int):
    run = build_run(distributions={("native", "idle"): lognormal_latency(2_000)}, repetitions=2, samples=400)
    for m in run.measurements:
        for r in m.results:
            r["missed"] = periods // 2 if r["cpu"] == "all" else 0
    return run
