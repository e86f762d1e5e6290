"""`rtvb-probe work --copies N`: N forked copies behind a barrier, alternated with 1-copy rounds.

Ground truths that hold on a shared machine:
- two copies pinned to ONE CPU share it, so together they run about as many runs per second as one
  copy alone: scaling efficiency ~0.5. That holds only if nothing else takes a share of that CPU
  (with k other busy processes there CFS gives one copy 1/(k+1) of it and two copies 2/(k+2): 0.67
  for k = 1), so the probe runs at a real-time priority (SCHED_FIFO 1): ordinary processes of the
  other engineers' tests cannot take the measured CPUs;
- on two CPUs the copies run where they were pinned (each reports the CPU it ended on), and the
  efficiency is above the one-CPU case measured in the same test, the two cases alternated so
  that a change of the machine's load hits both;
- every copy's checksum is verified, and a wrong expected checksum fails every copy.
"""

from __future__ import annotations

import json
import os
import re
import signal
import statistics
import subprocess
from pathlib import Path

import pytest

from host_helpers import cli_env, processes_with, run_cli, run_report, wait_for, work_campaign
from probe_records import of_type, records
from rtvbench.analysis.kind import get_kind
from rtvbench.campaign.reader import CampaignError, parse_campaign

# crc32 at the small size takes ~30 us a run here: 3000 runs make a round of ~0.1 s alone,
# long against the scheduler's time slices (a few ms), so that time-sharing averages out.
ARGS = ["work", "--kernels", "crc32", "--size", "small", "--repetitions", "3000", "--copies", "2",
        "--rounds", "3"]

two_cpus = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2 or not {0, 1} <= os.sched_getaffinity(0),
                              reason="needs CPUs 0 and 1")


def realtime() -> None:
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))


def can_realtime() -> bool:
    try:
        subprocess.run(["true"], preexec_fn=realtime, check=True)
        return True
    except (subprocess.SubprocessError, OSError):
        return False


def run(probe, *args: str, rt: bool = False) -> tuple[int, list[dict], str]:
    p = subprocess.run([str(probe), *args], capture_output=True, text=True, timeout=60,
                       preexec_fn=realtime if rt else None)
    return p.returncode, records(p.stdout), p.stderr


def result(probe, *args: str) -> dict:
    rc, recs, err = run(probe, *ARGS, *args, rt=True)
    assert rc == 0, err
    (r,) = of_type(recs, "result")
    return r


def check_rounds(r: dict, cpus: list[int]) -> None:
    """Every round's copies: pinned where asked, all runs done, every checksum verified."""
    assert r["copies"] == 2 and r["rounds"] == 3 and r["cpus"] == cpus
    assert [x["copies"] for x in r["copy_rounds"]] == [1, 2] * 3
    for x in r["copy_rounds"]:
        assert [c["cpu"] for c in x["per_copy"]] == cpus[:x["copies"]]
        # where each copy was when it ended: a pinned process cannot be anywhere else
        assert [c["ran_on"] for c in x["per_copy"]] == cpus[:x["copies"]]
        for c in x["per_copy"]:
            assert c["verified"] is True and c["checksum"] == r["expected"] == r["checksum"]
            assert c["runs"] == 3000 and 0 < c["time_ns"] <= x["span_ns"]
        assert x["span_ns"] == max(c["time_ns"] for c in x["per_copy"])
        assert x["runs_per_s"] == pytest.approx(x["runs"] * 1e9 / x["span_ns"], rel=1e-6)
    assert r["verified"] is True and r["repetitions"] == 3 * 3000   # the 1-copy rounds' runs


@two_cpus
@pytest.mark.skipif(not can_realtime(), reason="needs SCHED_FIFO, so that other processes cannot take the CPUs")
def test_scaling_on_one_cpu_and_on_two(probe):
    one, two = [], []
    for _ in range(2):        # alternated: a change of load on the machine hits both cases
        r1 = result(probe, "--cpus", "0")
        check_rounds(r1, [0, 0])
        one.append(r1)
        r2 = result(probe, "--cpus", "0,1")
        check_rounds(r2, [0, 1])
        two.append(r2)
    for r in one + two:
        per_round = [r["copy_rounds"][2 * i + 1]["runs_per_s"] / (2 * r["copy_rounds"][2 * i]["runs_per_s"])
                     for i in range(3)]
        assert r["scaling_efficiency"] == pytest.approx(statistics.median(per_round), rel=1e-6)
        assert r["copies_ips"] == pytest.approx(statistics.median(x["runs_per_s"] for x in r["copy_rounds"][1::2]),
                                                rel=1e-6)
    eff1 = statistics.median(r["scaling_efficiency"] for r in one)
    eff2 = statistics.median(r["scaling_efficiency"] for r in two)
    # Two copies time-sharing one CPU: together as fast as one alone.
    assert 0.35 <= eff1 <= 0.65, [r["scaling_efficiency"] for r in one]
    assert eff2 > eff1, (eff1, eff2)
    print(f"scaling efficiency of 2 copies: on 1 CPU {eff1:.3f}, on 2 CPUs {eff2:.3f}")


@pytest.mark.functional
def test_default_cpus_are_the_allowed_ones_round_robin(probe):
    allowed = sorted(os.sched_getaffinity(0))
    rc, recs, err = run(probe, "work", "--kernels", "crc32", "--size", "small", "--repetitions", "2",
                        "--copies", "3", "--rounds", "1")
    assert rc == 0, err
    (r,) = of_type(recs, "result")
    assert r["cpus"] == [allowed[i % len(allowed)] for i in range(3)]
    assert [len(x["per_copy"]) for x in r["copy_rounds"]] == [1, 3]
    assert all(c["verified"] for x in r["copy_rounds"] for c in x["per_copy"])


@pytest.mark.functional
def test_a_wrong_checksum_fails_every_copy(probe):
    rc, recs, _ = run(probe, "work", "--kernels", "crc32", "--size", "small", "--repetitions", "2", "--copies", "2",
                      "--rounds", "1", "--expect", "crc32.small=1234")
    assert rc == 3
    (r,) = of_type(recs, "result")
    assert r["verified"] is False and "differs from the expected" in r["error"]
    assert [c["verified"] for x in r["copy_rounds"] for c in x["per_copy"]] == [False] * 3
    assert {c["checksum"] for x in r["copy_rounds"] for c in x["per_copy"]} == {r["checksum"]}
    assert of_type(recs, "end")[0]["status"] == "error"


@pytest.mark.parametrize("args, message", [
    (["--cpus", "0"], "--rounds and --cpus apply to copies"),
    (["--rounds", "2"], "--rounds and --cpus apply to copies"),
    (["--copies", "0"], "--copies must be an integer from 1 to 256"),
])
@pytest.mark.functional
def test_copies_options(probe, args, message):
    rc, _, err = run(probe, "work", "--kernels", "crc32", "--size", "small", *args)
    assert rc == 2 and message in err


@pytest.mark.functional
def test_campaign_figures_and_report_table(probe, tmp_path):
    (tmp_path / "c.toml").write_text(work_campaign("copies", 2, repetitions=300, copies=2, rounds=1, cpus="0"))
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", "--export-json", "r.json", cwd=tmp_path,
                env=cli_env(probe), timeout=100)
    assert r.returncode == 0, r.stderr
    html = run_report(r)
    assert "cpu: multi-core scaling" in html
    table = html[html.index("cpu: multi-core scaling"):]
    table = table[:table.index("</table>")]
    [row] = re.findall(r"<tr><td>crc32 \(small\) <code>crc32.small</code></td>(.*?)</tr>", table)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
    assert cells[:3] == ["<code>native</code>", "<code>idle</code>", "2"], cells
    assert cells[3].endswith("runs/s") and cells[4].endswith("runs/s"), cells
    # The report's efficiency is the median of the probe's over the campaign's repetitions (at a
    # normal priority the value itself depends on what else runs on CPU 0: see the test above).
    doc = json.loads((tmp_path / "r.json").read_text())
    effs = [m["figures"]["crc32.small.scaling_efficiency"] for m in doc["measurements"]]
    ones = [m["figures"]["crc32.small.single_ips"] for m in doc["measurements"]]
    manys = [m["figures"]["crc32.small.copies_ips"] for m in doc["measurements"]]
    assert len(effs) == 2 and cells[6] == f"{statistics.median(effs):.2f}", (cells, effs)
    assert ones and manys
    # The speedup is of the same round pairs as the efficiency: 2 copies, 2 x the efficiency.
    assert cells[5] == f"{2 * statistics.median(effs):.2f}x", cells


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a live process (/proc/PID/stat); an ended one fails the test."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        raise AssertionError(f"process {pid} ended before it had run long enough") from None
    utime, stime = stat[stat.rindex(")") + 2:].split()[11:13]
    return (int(utime) + int(stime)) / os.sysconf("SC_CLK_TCK")


@pytest.mark.functional
def test_sigterm_reaches_the_copies(probe):
    """SIGTERM to the probe alone (as the runner sends it) stops its copies after their current run:
    the probe ends at once, interrupted, leaving no copy behind and no failure."""
    argv = [str(probe), "work", "--kernels", "crc32", "--size", "small", "--repetitions", "100000", "--copies",
            "2", "--rounds", "3"]
    marker = " ".join(argv[1:])
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        (copy,) = wait_for(lambda: [pid for pid in processes_with(marker) if pid != p.pid], 60,
                           "the first copy to start")
        # Signalled once the copy has run 0.1 s on a CPU: some 2000 of its 100000 runs (about 40 us
        # each with their checks, 4 s in all) are done however long other processes kept it waiting,
        # and most are still to come.
        wait_for(lambda: cpu_seconds(copy) >= 0.1, 60, "the copy to run for 0.1 s of CPU time")
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 0, err
    recs = records(out)
    (r,) = of_type(recs, "result")
    assert of_type(recs, "end")[0]["status"] == "interrupted"
    # Stopped in the first 1-copy round: no complete pair, and a few runs of it, not 100000.
    assert r["rounds"] == 0 and r["copy_rounds"] == [] and 0 < r["repetitions"] < 100000
    assert processes_with(marker) == []


def test_copies_figures():
    kind = get_kind("work")
    assert kind.split("crc32.small.copies_ips") == ("crc32.small.copies_ips", "rate", "")
    assert kind.split("crc32.small.scaling_efficiency") == ("crc32.small.scaling_efficiency", "count", "")
    assert kind.lower_is_better("crc32.small") and kind.lower_is_better("crc32.small_us")
    assert not kind.lower_is_better("crc32.small.scaling_efficiency")
    assert not kind.lower_is_better("crc32.small.copies_ips") and not kind.lower_is_better("crc32.small.single_ips")
    assert kind.label("crc32.small.scaling_efficiency") == "crc32 (small) scaling efficiency"


def test_a_requirement_on_efficiency_needs_copies(tmp_path):
    text = work_campaign("r", 1) + '\n[[requirements]]\nmetric = "cpu.crc32.small.scaling_efficiency"\nmin = 0.9\n'
    with pytest.raises(CampaignError, match="exists only with copies: set copies to 2 or more"):
        parse_campaign(text, "r.toml", tmp_path)
    parse_campaign(text.replace('size = "small"', 'size = "small"\ncopies = 2'), "r.toml", tmp_path)
