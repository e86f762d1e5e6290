"""The `rtos` kind in a bare-metal partition: `port = true` runs the tests written against the porting layer
in every environment (the image's own scheduler there, `rtos --port` on Linux), so a comparison between the
partition and this machine compares the same four tests. Validate refuses what the image cannot take, each
in one sentence naming the environment and key; a run checks every result's ground truths (count, runs,
in_order, sem_left), never a time, and the report's declared comparison of each test's figures."""

from __future__ import annotations

import pytest
from baremetal_console import build_images

from host_helpers import cli_env, json_report, refuses_once, run_cli
from rtvbench.campaign.reader import CampaignError, parse_campaign
from rtvbench.store import load_run, open_store

PORT_TESTS = ["task_activate", "sem_wake", "sem_pingpong", "irq_task"]
WARMUP = 10                         # probe/port/port_tests.h: PORT_WARMUP
COUNT = 200

pytestmark = [pytest.mark.qemu, pytest.mark.functional]


@pytest.fixture(scope="module")
def image() -> None:
    build_images("qemu-system-aarch64", "aarch64-linux-gnu-gcc")


def _campaign(benchmark: str) -> str:
    return f"""
name = "partition-rtos"
repetitions = 1
seed = 1

[environments.native]
target = "local"

[environments.bm]
target = "qemu"
arch = "aarch64"
image = "bare-metal"

[loads.idle]

[benchmarks.port]
kind = "rtos"
{benchmark}
[[comparisons]]
baseline = "bm"
candidate = "native"
"""


REFUSED = {
    "the subcommand's tests": ("count = 10\n", 'benchmarks.port.port: cannot be honoured in environment "bm", a '
                               "bare-metal image: it runs the tests written against the porting layer only "
                               "(task_activate, sem_wake, sem_pingpong, irq_task); set port = true"),
    "a pinned CPU": ("port = true\ncpus = [0]\n", 'benchmarks.port.cpus: cannot be honoured in environment "bm", a '
                     'bare-metal image, whose "rtos" takes only count, tests, port; drop cpus'),
    "a policy": ('port = true\npolicy = "rr"\n', 'benchmarks.port.policy: cannot be honoured in environment "bm"'),
    "a priority": ("port = true\npriority = 50\n", 'benchmarks.port.priority: cannot be honoured in environment '
                   '"bm"'),
}


@pytest.mark.parametrize("case", REFUSED, ids=list(REFUSED))
def test_validate_refuses_what_the_partitions_rtos_cannot_take(image, tmp_path, case):
    benchmark, said = REFUSED[case]
    (tmp_path / "c.toml").write_text(_campaign(benchmark))
    refuses_once(tmp_path, said)


@pytest.mark.parametrize("keys, said", [
    ('port = true\ntests = ["mutex"]', "test mutex is not one of port = true's tests (task_activate, sem_wake, "
                                       "sem_pingpong, irq_task); list only those"),
    ('tests = ["irq_task"]', "test irq_task is not one of the subcommand's tests (futex_wake, sem_wake, mutex, "
                             "mutex_handover, sem, sem_pingpong, mq, signal, yield, timer); set port = true or "
                             "list only those"),
    ("port = true\npriority = 95", "port = true needs priority from 4 to 94"),
])
def test_the_tests_and_priority_are_held_to_the_mode(keys, said):
    text = _campaign(keys).replace(
        '\n[environments.bm]\ntarget = "qemu"\narch = "aarch64"\nimage = "bare-metal"\n', "").replace(
        '[[comparisons]]\nbaseline = "bm"\ncandidate = "native"\n', "")
    with pytest.raises(CampaignError) as caught:
        parse_campaign(text)
    assert said in str(caught.value)


def test_port_true_asks_the_linux_probe_for_its_port_tests_and_the_image_for_its_options():
    from rtvbench.benchmarks.base import BENCHMARKS
    from rtvbench.kinds.rtos.params import RtosParams
    bench = BENCHMARKS.get("rtos")("b", RtosParams(port=True, count=5, tests=["sem_wake", "irq_task"]))
    argv = ["rtvb-probe", *bench.probe_args()]
    assert argv[:3] == ["rtvb-probe", "rtos", "--port"] and argv[argv.index("--tests") + 1] == "sem_wake,irq_task"
    assert bench.freestanding_argv(argv) == ["rtvb-probe", "rtos", "--count", "5", "--tests", "sem_wake,irq_task"]
    whole = BENCHMARKS.get("rtos")("b", RtosParams(port=True))
    assert whole.params.tests == tuple(PORT_TESTS) and "all" in whole.probe_args()


@pytest.mark.timeout(300)           # a hang guard: two measurements of a few seconds, one of them under TCG
def test_the_partition_and_this_machine_run_the_same_port_tests_and_the_report_compares_them(image, probe,
                                                                                          tmp_path):
    (tmp_path / "c.toml").write_text(_campaign(f"port = true\ncount = {COUNT}\n"))
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=cli_env(probe), timeout=240)
    assert r.returncode == 0, r.stderr
    assert "2 of 2 measurements ok" in r.stdout
    run = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), 1)
    by_env = {m.environment: m for m in run.measurements}
    assert set(by_env) == {"bm", "native"}
    assert by_env["bm"].meta["platform"] == "baremetal"
    for env, m in by_env.items():
        assert m.status == "ok", m.error
        assert "--port" in m.command and m.meta["params"]["port"] is True, env
        assert [r["test"] for r in m.results if r["type"] == "result"] == PORT_TESTS, env
        if env == "native" and m.meta["privileges"]["policy"] != "fifo":
            continue                # without SCHED_FIFO the order is the scheduler's, not the priorities'
        for res in (r for r in m.results if r["type"] == "result"):
            assert res["via"] == "port" and "error" not in res, (env, res)
            assert res["count"] == COUNT and res["runs"] == res["in_order"] == COUNT + WARMUP, (env, res)
            assert res["sem_left"] == 0, (env, res)
    rows = [c for c in json_report(tmp_path)["comparisons"] if c["declared"]]
    assert {(c["baseline"]["environment"], c["candidate"]["environment"]) for c in rows} == {("bm", "native")}
    assert {c["figure"] for c in rows} == {f"{t}.{s}_us" for t in PORT_TESTS for s in ("avg", "p99", "max")}
    assert all(c["baseline_median"] > 0 and c["candidate_median"] > 0 for c in rows), rows
