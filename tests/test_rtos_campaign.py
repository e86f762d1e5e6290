"""A campaign with an `rtos` benchmark through `rtvbench run` on the local target with the real probe:
the report's table of primitives (min/avg/p99/max per primitive, per environment and load), the figures
in the JSON report, a requirement on one of them; and the campaign keys validated as the probe does.
"""

from __future__ import annotations

import json
import os

import pytest

from host_helpers import cli_env, run_cli, run_report
from rtvbench.campaign.reader import CampaignError, parse_campaign
from rtvbench.kinds.rtos.names import RTOS_TESTS

CPU = 1 if (os.cpu_count() or 1) > 1 else 0

CAMPAIGN = f"""
name = "rtos-e2e"
repetitions = 2
seed = 1

[environments.native]
target = "local"

[loads.idle]

[benchmarks.prim]
kind = "rtos"
count = 200
cpus = [{CPU}]

[conditions]
max_foreign_percent = 100   # the machine is shared: the figures are judged here, not its quietness

[[requirements]]
metric = "prim.futex_wake.p99_us"
max = 1000
"""


@pytest.fixture(scope="module")
def reports(probe, tmp_path_factory):
    """The HTML report `run` wrote and the JSON one `report` writes (both name their file last)."""
    tmp = tmp_path_factory.mktemp("rtos")
    (tmp / "c.toml").write_text(CAMPAIGN)
    env, store = cli_env(probe), "sqlite:///s.db"
    ran = run_cli("run", "c.toml", "--store", store, cwd=tmp, env=env, timeout=110)
    assert ran.returncode == 0 and "Traceback" not in ran.stderr, ran.stdout + ran.stderr
    assert "Run 1 of rtos-e2e finished: 2 of 2 measurements ok" in ran.stdout, ran.stdout
    reported = run_cli("report", "--format", "json", "--store", store, cwd=tmp, env=env)
    assert reported.returncode == 0, reported.stderr
    return {"html": run_report(ran), "json": json.loads(run_report(reported))}


def test_json_report_has_every_primitives_figures(reports):
    doc = reports["json"]
    assert doc["benchmarks"] == {"prim": {"kind": "rtos"}}
    for m in doc["measurements"]:
        f = m["figures"]
        for test in RTOS_TESTS:
            for stat in ("min", "avg", "p99", "max"):
                assert f[f"{test}.{stat}_us"] * 1000 == pytest.approx(f[f"{test}.{stat}_ns"]), (test, stat)
            assert f[f"{test}.min_us"] <= f[f"{test}.avg_us"] <= f[f"{test}.max_us"]
        assert f["sem_pingpong.half.avg_ns"] == pytest.approx(f["sem_pingpong.avg_ns"] / 2)
        assert f["sem_pingpong.forward.avg_ns"] + f["sem_pingpong.back.avg_ns"] == \
            pytest.approx(f["sem_pingpong.avg_ns"], abs=0.01)
        # An activation is a switch between threads; an uncontended lock is not: ground truth for the units.
        assert f["mutex.min_ns"] < f["futex_wake.min_ns"]
        assert f["timer.min_us"] > 0
    rows = {(p["environment"], p["load"], p["primitive"]): p for p in doc["primitives"]["prim"]}
    assert {r[2] for r in rows} == set(RTOS_TESTS) | {f"sem_pingpong.{p}" for p in ("half", "forward", "back")}
    futex = rows[("native", "idle", "futex_wake")]
    # The mean may pass p99: fewer than 1 % of the samples, if long enough (a vCPU descheduled), lift it.
    assert futex["min_ns"] <= futex["avg_ns"] <= futex["max_ns"]
    assert futex["min_ns"] <= futex["p99_ns"] <= futex["max_ns"]
    (v,) = doc["verdicts"]
    # ~2 us against a 1 ms bound: PASS, unless other work took the measured CPUs (beside stress-ng
    # --cpu 2 it did), when the requirement rightly cannot be judged, and says why.
    unclean = any(m["conditions"] and not m["conditions"]["ok"] for m in doc["measurements"])
    assert v["status"] == "PASS" or (unclean and v["status"] == "INCONCLUSIVE"
                                     and "conditions not met" in v["reason"]), v


def test_html_has_the_table_of_primitives(reports):
    html = reports["html"]
    caption = "prim: primitives in <code>native</code> under <code>idle</code> (medians over 2 completed repetitions)"
    assert caption in html
    table = html[html.index(caption):]
    table = table[:table.index("</table>")]
    for column in ("Primitive", "min", "avg", "p99", "max", "worst max"):
        assert f"<th>{column}</th>" in table, column
    for test in RTOS_TESTS:
        assert f"<code>{test}</code>" in table, test
    assert "<code>sem_pingpong.half</code>" in table
    assert "Per-operation cost of the primitives a real-time OS offers" in html
    assert "Key results of the rtos benchmarks" in html


def test_probe_command_carries_every_key():
    from rtvbench.benchmarks import BENCHMARKS
    cls = BENCHMARKS.get("rtos")
    b = cls("r", cls.Params.model_validate({"policy": "rr", "priority": 50, "count": 10, "tests": ["mq", "timer"],
                                            "cpus": "3"}))
    assert b.probe_args() == ["rtos", "--policy", "rr", "--count", "10", "--tests", "mq,timer", "--priority", "50",
                              "--cpus", "3"]
    default = cls("r", cls.Params.model_validate({}))
    assert default.probe_args() == ["rtos", "--policy", "fifo", "--count", "1000", "--tests", "all",
                                    "--priority", "80"]
    assert cls("r", cls.Params.model_validate({"policy": "other"})).probe_args()[:3] == ["rtos", "--policy", "other"]


@pytest.mark.parametrize("keys,fragment", [
    ("priority = 1", 'policy "fifo" needs priority from 2 to 99 here'),
    ('policy = "other"\npriority = 5', 'policy "other" takes no real-time priority'),
    ("count = 0", "count"),
    ('cpus = "0-1"', "must name at most 1 CPUs"),
    ('tests = ["mutex", "irq_disable"]', 'unknown test "irq_disable"'),
])
def test_validate_refuses_what_the_probe_refuses(keys, fragment):
    text = f'name = "x"\n[environments.e]\ntarget = "local"\n[benchmarks.r]\nkind = "rtos"\n{keys}\n'
    with pytest.raises(CampaignError) as e:
        parse_campaign(text, "c.toml")
    assert fragment in str(e.value)


@pytest.mark.parametrize("field,value", [
    ("test", ["futex_wake"]), ("test", {"a": 1}), ("test", "irq"), ("p99_ns", [1, 2]), ("avg_ns", None),
    ("histogram", {}), ("half_round_trip", [1]), ("half_round_trip", {"min_ns": [1, 2]}), ("forward", "x"),
    ("forward", {"count": 2, "p50_ns": [3]}), ("back", {"count": 0, "min_ns": None}),
])
def test_decoder_reads_odd_records_the_host_accepts(field, value):
    """A record that passes the host's checks (rtvbench/probe_schema.py), whatever it holds in the fields
    those leave open, decodes without an exception; what is unusable yields no figure."""
    from rtvbench.analysis.kind import get_kind
    from rtvbench.probe.schema import parse_record
    from rtvbench.results import Measurement
    good = {"type": "result", "test": "sem_pingpong", "count": 3, "min_ns": 10, "avg_ns": 12.0, "max_ns": 15,
            "p50_ns": 12, "p99_ns": 15, "histogram": {"scheme": "log-linear", "sub_bucket_bits": 8,
                                                      "buckets": [[10, 11, 1], [12, 13, 1], [15, 16, 1]]},
            "half_round_trip": {"min_ns": 5, "avg_ns": 6.0, "p50_ns": 6, "p99_ns": 7.5, "max_ns": 7.5},
            "forward": {"count": 3, "min_ns": 5, "avg_ns": 6.0, "max_ns": 8},
            "back": {"count": 3, "min_ns": 5, "avg_ns": 6.0, "max_ns": 7}}
    odd = parse_record(json.dumps({**good, field: value}))
    m = Measurement(id=1, environment="e", load="l", benchmark="b", kind="rtos", repetition=0, status="ok",
                    command=[], load_commands=[], started_at=None, finished_at=None, meta=None,
                    results=[odd], windows=[], warnings=[])
    kind = get_kind("rtos")
    result = kind.decode(m)
    assert all(kind.is_figure(f) for f in result.figures)
    f = result.figures
    if field == "test":
        assert f == {} and result.distributions == {}
    else:
        assert f["sem_pingpong.min_ns"] == 10
        assert ("sem_pingpong" in result.distributions) == (field != "histogram")
    if field == "p99_ns":
        assert f["sem_pingpong.p99_ns"] == pytest.approx(15, abs=1)     # read from the histogram instead
    if field == "half_round_trip":
        assert not [x for x in f if x.startswith("sem_pingpong.half.")]
    if field == "forward":
        assert not [x for x in f if x.startswith("sem_pingpong.forward.")] and f["sem_pingpong.back.max_ns"] == 7
    for h in result.distributions.values():
        h.percentile(99), h.ccdf()
