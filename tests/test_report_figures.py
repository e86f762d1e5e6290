"""Figures a report prints are the ones the evaluation computed, labelled by what produced them: a
p-value by the test that gave it."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest

from host_helpers import cli_env, run_cli

from rtvbench.analysis.compare import LOG_T, RANK, ratio_test
from rtvbench.analysis.evaluation import evaluate_run
from rtvbench.analysis.kind import get_kind
from rtvbench.kinds.latency.interference import AggressorRow, Ranking
from rtvbench.kinds.latency.section import ranking_table
from rtvbench.campaign.reader import spec_of
from rtvbench.records import HostSample
from rtvbench.report.csv_export import render_csv
from rtvbench.report.json_export import render_json
from rtvbench.report.loads import usage_tables
from rtvbench.report.section import section_for
from rtvbench.results import CampaignRun, Measurement
from rtvbench.run_analyses.host_usage.analysis import measurement_host_usage

pytestmark = pytest.mark.functional


def _quiet_evaluation():
    """Just enough of an Evaluation for a ranking table: no load achieved anything."""
    return SimpleNamespace(cell=lambda *a: SimpleNamespace(loads_achieved=[]),
                           data=SimpleNamespace(load=lambda name: None, environment=lambda name: None))


def _ranking_of(test) -> Ranking:
    rows = [AggressorRow("idle", True, 100.0, None, 0, [0, 0, 0]),
            AggressorRow("busy", False, 120.0, test, 0, [0, 0, 0])]
    return Ranking("victim", "native", "idle", "response_p999_us", "deadline_misses", rows)


def test_a_ranking_names_the_test_its_p_value_came_from():
    welch = ratio_test([100.0, 101.0, 99.0], [120.0, 121.0, 119.0])
    assert welch.method == LOG_T
    table = ranking_table(_quiet_evaluation(), _ranking_of(welch), get_kind("latency"))
    heading = next(h for h in table.header if h.startswith("p"))
    assert "Mann-Whitney" not in heading and "Welch" in heading
    ranked = ratio_test([100.0 + i for i in range(8)], [130.0 + i for i in range(8)])
    assert ranked.method == RANK
    table = ranking_table(_quiet_evaluation(), _ranking_of(ranked), get_kind("latency"))
    assert "p (Mann-Whitney)" in table.header


def test_a_qemu_share_from_skewed_counters_is_never_below_zero():
    def sample(t: float, vcpu: int, other: int) -> dict:
        return {"t": t, "clock_ticks": 100,
                "guests": [{"guest": 1, "pid": 7, "vcpus": 1, "vcpu": {"user": vcpu, "system": 0},
                            "other": {"user": other, "system": 0}, "vcpu_wait_ns": 0}]}
    # ten seconds: the vCPU thread ran 5 s, "other" read one tick less after than before
    m = SimpleNamespace(host_samples=(HostSample.of(sample(0.0, 100, 12)), HostSample.of(sample(10.0, 600, 11))))
    usage = measurement_host_usage(m)
    assert usage[0].vcpu_percent == pytest.approx(50.0)
    assert usage[0].other_percent == 0


OPENSSL_MR = ("+H:16:64:256:1024:8192:16384\n"
              "+F:22:aes-128-cbc:912345678.90:1234567890.12:1345678901.23:1400000000.00:1410000000.00:"
              "1420000000.00\n")


def test_openssl_speed_block_sizes_in_numeric_order_and_rates_in_mb_per_s(tmp_path):
    out = tmp_path / "speed.txt"
    out.write_text(OPENSSL_MR)
    store = f"sqlite:///{tmp_path}/s.db"
    r = run_cli("import", str(out), "--format", "openssl-speed", "--environment", "board", "--store", store,
                cwd=tmp_path, env=cli_env())
    assert r.returncode == 0, r.stderr
    r = run_cli("report", "--format", "md", "-o", "-", "--store", store, cwd=tmp_path, env=cli_env())
    assert r.returncode == 0, r.stderr
    rows = [line for line in r.stdout.splitlines() if line.startswith("| aes-128-cbc.")]
    sizes = [int(re.match(r"\| aes-128-cbc\.(\d+)B", line).group(1)) for line in rows]
    first = sizes[:sizes.index(16384) + 1]
    assert first == [16, 64, 256, 1024, 8192, 16384]
    # 912 345 678.90 B/s is 912 MB/s (912 345.68 kB/s as openssl prints it)
    assert any("MB/s" in line and "912" in line for line in rows if "aes-128-cbc.16B." in line)
    assert "B/s" not in " ".join(line.replace("MB/s", "") for line in rows)


def _one_cell_run(kind: str, keys: dict, results: list[list[dict]] | dict[str, list[list[dict]]],
                  warnings: dict[str, list[dict]] | None = None,
                  busy: dict[str, float] | None = None) -> CampaignRun:
    """A run of one benchmark `b` under one load: a repetition per list of result records, the same in
    "native" or per environment (`results` by environment name, with its `warnings` per repetition and
    the percent of all CPUs `busy` in every repetition)."""
    per_env = results if isinstance(results, dict) else {"native": results}
    campaign = {"name": "figures", "repetitions": len(next(iter(per_env.values()))),
                "environments": {e: {"target": "local"} for e in per_env}, "loads": {"idle": {}},
                "benchmarks": {"b": {"kind": kind, **keys}}}
    t0 = datetime(2024, 6, 1, tzinfo=timezone.utc)
    ms = [Measurement(id=100 * k + i + 1, environment=env, load="idle", benchmark="b", kind=kind, repetition=i,
                      status="ok", command=["rtvb-probe", kind], load_commands=[], started_at=t0, finished_at=t0,
                      meta={"type": "meta", "subcommand": kind}, results=records,
                      warnings=list((warnings or {}).get(env, [])),
                      cpu_stat=_proc_stat(busy[env]) if busy else {})
          for k, (env, reps) in enumerate(per_env.items()) for i, records in enumerate(reps)]
    return CampaignRun(id=1, campaign_name="figures", campaign_text="", campaign=campaign, spec=spec_of(campaign),
                       status="finished", started_at=t0, finished_at=t0, fingerprints={}, measurements=ms)


def _proc_stat(busy_percent: float) -> dict:
    """/proc/stat before and after 1000 ticks of which `busy_percent` were user time."""
    user = round(10 * busy_percent)
    return {"before": {"cpu": {"user": 0, "idle": 0}},
            "after": {"cpu": {"user": user, "idle": 1000 - user}}}


def _work_run(pairs: list[tuple[float, float, float]]) -> CampaignRun:
    """A `work` benchmark with 2 copies, a repetition per (1-copy runs/s, 2-copies runs/s, the probe's
    efficiency over its round pairs)."""
    return _one_cell_run("work", {"kernels": ["crc32"], "size": "small", "copies": 2},
                         [[{"type": "result", "kernel": "crc32", "size": "small", "verified": True,
                            "median_ns": 1000, "copies": 2, "single_ips": one, "copies_ips": many,
                            "scaling_efficiency": eff}] for one, many, eff in pairs])


def _results(ev, bench: str = "b") -> list:
    kind = ev.data.kind(bench)
    return section_for(kind.name).parts(ev, bench, kind, False, "x").results


def test_speedup_and_scaling_efficiency_agree():
    """A probe's efficiency is the median over its round pairs of N-copies / (N x 1-copy) runs/s; the
    medians of the runs/s of each kind of round need not divide to N times it (0.95x beside 0.53)."""
    ev = evaluate_run(_work_run([(100.0, 95.0, 0.53), (101.0, 96.0, 0.52), (99.0, 94.0, 0.54)]))
    [table] = [t for t in _results(ev) if "multi-core scaling" in t.caption]
    [row] = table.rows
    cells = dict(zip(table.header, row.cells))
    assert cells["Scaling efficiency"] == "0.53"
    assert cells["Speedup"] == "1.06x"           # 2 x 0.53: the same pairs' ratio
    assert ev.summary("native", "idle", "b", "crc32.small.speedup").median == pytest.approx(1.06)


def test_ipc_tables_show_the_minimum_round_trip():
    def client(size: int, lo: int) -> dict:
        return {"type": "result", "role": "client", "transport": "unix", "size_bytes": size, "count": 1000,
                "verified": True, **{f"{k}_ns": v for k, v in (("min", lo), ("avg", 2 * lo), ("max", 9 * lo),
                                                               ("stddev", lo), ("p99", 5 * lo))}}
    ev = evaluate_run(_one_cell_run("ipc", {"transports": ["unix"], "sizes_bytes": [64, 4096]},
                                    [[client(64, 3000), client(4096, 7000)]] * 3))
    text = "\n".join(" | ".join(row.cells) for t in _results(ev) for row in t.rows)
    for size, lo in ((64, "3.00"), (4096, "7.00")):
        lines = [row for row in text.splitlines() if row.startswith(f"unix {size} B min")]
        assert len(lines) == 2 and all(f"| {lo}" in line for line in lines), text   # averages, repetitions
    # shown, not compared: the overhead tables and key results keep to the mean and the tail
    assert "unix.64B.min" not in get_kind("ipc").compared_figures(ev.data.figure_names("b"))


SHELL_CAMPAIGN = """
name = "fork"
[environments.native]
target = "local"
[environments.guest]
target = "qemu"
arch = "x86_64"
kernel = "KERNEL"
[loads.idle]
[benchmarks.os]
kind = "os"
tests = TESTS
"""


def test_fork_sh_is_refused_where_the_target_has_no_shell(tmp_path):
    kernel = Path(__file__).resolve().parent.parent / "kernels" / "x86_64" / "vmlinuz"
    campaign = SHELL_CAMPAIGN.replace("KERNEL", str(kernel))
    (tmp_path / "c.toml").write_text(campaign.replace("TESTS", '["fork", "fork_sh"]'))
    r = run_cli("validate", "c.toml", cwd=tmp_path, env=cli_env())
    assert r.returncode == 2, r.stdout + r.stderr
    assert 'test "fork_sh"' in r.stderr and 'environment "guest"' in r.stderr and "/bin/sh" in r.stderr
    # every test (the default): the probe skips fork_sh where there is no shell, and says so
    (tmp_path / "c.toml").write_text(campaign.replace("TESTS", '"all"'))
    r = run_cli("validate", "c.toml", cwd=tmp_path, env=cli_env())
    assert r.returncode == 0, r.stderr


def test_a_figure_with_no_value_says_why_and_is_compared_with_nothing():
    """fork_sh skipped in a guest without a shell: its empty cell gives the probe's reason, and the
    comparison with the native cell is no data with that reason, not a "0 vs 0" row."""
    def os_result(test: str, ns: float) -> dict:
        return {"type": "result", "test": test, "ns_per_op": ns, "min_ns": ns * 0.9}
    skipped = {"type": "warning", "code": "test_skipped",
               "message": "fork_sh skipped: /bin/sh does not exist here."}
    run = _one_cell_run("os", {"tests": ["fork", "fork_sh"]},
                        {"native": [[os_result("fork", 90000.0), os_result("fork_sh", 900000.0)]] * 3,
                         "guest": [[os_result("fork", 150000.0)]] * 3},
                        warnings={"guest": [skipped]})
    ev = evaluate_run(run)
    [c] = [c for c in ev.comparisons if c.figure == "fork_sh"]
    assert c.verdict == "no data" and "/bin/sh does not exist here" in c.no_data and "`guest / idle`" in c.no_data
    results = _results(ev)
    [row] = [r for r in results[0].rows if r.cells[0].endswith("`fork_sh`")]
    assert row.cells[3] == "– (fork_sh skipped: /bin/sh does not exist here)"
    [table] = [t for t in section_for("os").parts(ev, "b", get_kind("os"), False, "x").comparisons
               if "guest" in t.caption]
    [row] = [r for r in table.rows if r.cells[0].endswith("`fork_sh`")]
    assert "0 vs 0" not in row.cells and "3 vs 0" not in row.cells
    assert row.cells[-1] == "no data: `guest / idle`: fork_sh skipped: /bin/sh does not exist here"


def test_a_clamped_context_switch_is_no_value_and_the_cell_is_over_the_others():
    """ctx.4p_256k: 0 ns in one repetition whose hop without a switch cost as much as the ring (samples
    clamped at 0), 2 880 and 2 920 ns in the two others: the cell is 2 900 over those two, and says
    one repetition was left out and why."""
    def ctx(ns: float, clamped: int) -> dict:
        return {"type": "result", "test": "ctx", "label": "4p/256k", "procs": 4, "ws_bytes": 262144,
                "ns_per_op": ns, "min_ns": ns * 0.95, "overhead_subtracted_ns": 5000.0, "samples": 40,
                "clamped_samples": clamped, "converged": clamped == 0,
                "not_converged_reason": "the switch is lost in the noise" if clamped else None}
    ev = evaluate_run(_one_cell_run("os", {"tests": ["ctx"]}, [[ctx(2880.0, 0)], [ctx(0.0, 40)], [ctx(2920.0, 0)]]))
    s = ev.summary("native", "idle", "b", "ctx.4p_256k")
    assert (s.n, s.mean, s.min) == (2, 2900.0, 2880.0)
    table = _results(ev)[0]
    [row] = [r for r in table.rows if r.cells[0].endswith("`ctx.4p_256k`")]
    assert row.cells[2] == "2.90 ± 0.0283 (min 2.88, max 2.92; 1 more not a value)", row.cells
    assert "1 of 3 repetitions not a value" in table.note and "40 of 40 samples (clamped at 0)" in table.note


def test_cpu_busy_against_the_baseline_environment_in_percentage_points():
    """native 30 % busy, guest 45.5 %: +15.5 points beside both shares, in the table, the JSON and the CSV."""
    record = {"type": "result", "test": "fork", "ns_per_op": 90000.0, "min_ns": 80000.0}
    run = _one_cell_run("os", {"tests": ["fork"]}, {"native": [[record]] * 3, "guest": [[record]] * 3},
                        busy={"native": 30.0, "guest": 45.5})
    ev = evaluate_run(run)
    d = ev.cell("guest", "idle", "b").busy_vs_baseline
    assert (d.baseline, d.baseline_busy, d.points) == ("native", 30.0, pytest.approx(15.5))
    assert ev.cell("native", "idle", "b").busy_vs_baseline is None
    [table] = [t for t in usage_tables(ev, "b") if "load achieved and CPU usage" in t.caption]
    column = table.header.index("Busy against `native` (pp)")
    assert [r.cells[column] for r in table.rows] == ["baseline", "+15.5 pp (45.5 % vs 30.0 %)"]
    doc = json.loads(render_json(ev))
    [cell] = [c for c in doc["load_cells"] if c["environment"] == "guest"]
    assert cell["busy_vs_baseline"]["difference_points"] == pytest.approx(15.5)
    rows = [line.split(",") for line in render_csv(ev).splitlines()]
    points = [float(r[9]) for r in rows if r[8] == "cpu_usage.all.busy_vs_native_points"]
    assert points == [pytest.approx(15.5)] * 3


def test_the_results_table_gives_mean_and_standard_deviation():
    """fork at 90, 100 and 110 us: 100 ± 10 (the sample deviation, n - 1), min 90, max 110."""
    ev = evaluate_run(_one_cell_run("os", {"tests": ["fork"]},
                                    [[{"type": "result", "test": "fork", "ns_per_op": ns, "min_ns": ns}]
                                     for ns in (90000.0, 100000.0, 110000.0)]))
    table = _results(ev)[0]
    assert "average ± sd (min, max)" in table.caption
    [row] = [r for r in table.rows if r.cells[0].endswith("`fork`")]
    assert row.cells[2] == "100 ± 10.0 (min 90.0, max 110)"


def test_a_figure_that_is_no_value_in_every_repetition_keeps_its_row_with_the_reason():
    lost = {"type": "result", "test": "ctx", "label": "2p/0k", "procs": 2, "ws_bytes": 0, "ns_per_op": 0.0,
            "min_ns": 0.0, "overhead_subtracted_ns": 2400.0, "samples": 256, "clamped_samples": 256,
            "converged": False}
    fork = {"type": "result", "test": "fork", "ns_per_op": 90000.0, "min_ns": 80000.0}
    ev = evaluate_run(_one_cell_run("os", {"tests": ["fork", "ctx"]}, [[fork, lost]] * 3))
    assert ev.summary("native", "idle", "b", "ctx.2p_0k") is None
    [row] = [r for r in _results(ev)[0].rows if r.cells[0].endswith("`ctx.2p_0k`")]
    assert row.cells[2] == ("– (not a value in any of the 3 repetitions: the subtracted cost was as large as "
                            "the measurement in 256 of 256 samples (clamped at 0))")


def test_a_context_switch_that_cannot_be_told_from_zero_is_no_value_with_its_error():
    r = {"type": "result", "test": "ctx", "label": "2p/0k", "procs": 2, "ws_bytes": 0, "ns_per_op": 864.0,
         "min_ns": 200.0, "overhead_subtracted_ns": 735.0, "samples": 76, "clamped_samples": 0,
         "converged": False, "rel_error": 0.62, "not_converged_reason": "the hop without a switch costs 735 ns"}
    m = SimpleNamespace(results=[r])
    kind = get_kind("os")
    assert kind.not_values(m) == {"ctx.2p_0k": "the difference cannot be told from zero (62 % standard error)",
                                  "ctx.2p_0k.min": "the difference cannot be told from zero (62 % standard error)"}
    assert kind.quantities(m) == {}
    # One that only missed the probe's 1 % target is a value, with the convergence warning beside it.
    r.update(ns_per_op=2864.0, min_ns=2000.0, rel_error=0.0298)
    assert kind.not_values(m) == {}
    assert kind.quantities(m)["ctx.2p_0k"][1] == 2864.0
