"""End-to-end tests of `rtvb-probe latency` against ground truth and against cyclictest.

Ground truths: a stall injected with SIGSTOP of a known length, the number of
activations implied by the loop count, thresholds placed around that stall.
Peer: rt-tests' cyclictest from Debian, run alternately with the probe.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import time
from pathlib import Path

import pytest

from above_other_load import this_thread_above_other_load
from helpers.proc_state import asleep_on_a_timer, read_to_end, thread_cpu_ns, threads
from host_helpers import wait_for
from probe_records import of_type, records

MS = 1_000_000
US = 1_000



def run_latency(probe: Path, *args: str, **kw) -> list[dict]:
    proc = subprocess.run([str(probe), "latency", *args], capture_output=True, text=True, timeout=120, **kw)
    assert proc.returncode == 0, proc.stderr
    return records(proc.stdout)


def merged(recs: list[dict]) -> dict:
    (res,) = [r for r in of_type(recs, "result") if r["cpu"] == "all"]
    return res


def _state(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2]


def stall_running_probe(cmd: list[str], stall_s: float) -> tuple[list[dict], int]:
    """Start a latency run, wait until it has printed its first window (so it
    is measuring, however slowly it started), freeze it for `stall_s`, let it
    finish. Returns the records and the stall's measured length in ns."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if json.loads(line)["type"] == "window":
            break
    # The stall starts when the process is stopped, not when the signal is sent: on a loaded
    # machine (or under qemu-user) delivery can take a large part of a millisecond. The test
    # times it above other load, or a hog would delay its view of the stop.
    with this_thread_above_other_load():
        os.kill(proc.pid, signal.SIGSTOP)
        while _state(proc.pid) != "T":
            time.sleep(0.0001)
        t_stop = time.monotonic_ns()
        while time.monotonic_ns() - t_stop < stall_s * 1e9:
            time.sleep(0.0005)
        os.kill(proc.pid, signal.SIGCONT)
        stall_ns = time.monotonic_ns() - t_stop
    out = read_to_end(proc, 60)     # not communicate(): it would skip what the loop above read ahead
    assert proc.returncode == 0
    return records("".join(lines) + out), stall_ns


def stalled_run(probe: Path, stall_s: float, mode: str) -> tuple[list[dict], int]:
    """1 ms on CPU 0 for 1.2 s, windows of 0.4 s, thresholds at 1, 10 and 100 ms."""
    return stall_running_probe(
        [str(probe), "latency", "--interval-us", "1000", "--duration-s", "1.2", "--cpus", "0",
         "--window-s", "0.4", "--threshold-us", "1000", "--threshold-us", "10000", "--threshold-us", "100000",
         "--mode", mode], stall_s)


@pytest.mark.parametrize("mode", ["abstime", "relative"])
def test_injected_stall_is_measured_and_missed_periods_counted(probe, mode):
    # The stop lands at a random phase of the 1 ms period, so the wake-up that
    # ends it is between (stall - 1 ms) and stall late: a 51 ms stall gives at
    # least 50 ms of lateness whatever the phase.
    recs, stall_ns = stalled_run(probe, 0.051, mode)
    res = merged(recs)
    assert 50 * MS <= res["max_ns"] < 70 * MS, res["max_ns"]
    assert stall_ns - 1 * MS - 200_000 <= res["max_ns"] <= stall_ns + 3 * MS, (res["max_ns"], stall_ns)
    # The stalled wake-up alone misses max // interval periods: about 50.
    from_stall = res["max_ns"] // MS
    assert abs(from_stall - 50) <= 3, from_stall
    # The stalled sample is beyond 10 ms, none beyond 100 ms.
    over_10ms, over_100ms = (res["over"][k] for k in ("10000000", "100000000"))
    assert over_10ms >= 1 and over_100ms == 0, res["over"]
    # Every wake-up L late skipped floor(L / interval) periods: the stall's about 50, and any other
    # late one's (this VM descheduled now and then, 1 ms to tens of ms) as many as its lateness holds.
    # The histogram bounds each sample's lateness to its bucket, so the missed periods to a range; the
    # periods are counted when the activation ends, a few microseconds after its timestamp (200 us allowed).
    buckets = res["histogram"]["buckets"]
    fewest = sum(c * (lo // MS) for lo, hi, c in buckets)
    most = sum(c * ((hi - 1 + 200_000) // MS) for lo, hi, c in buckets)
    assert fewest <= res["missed"] <= most, (res["missed"], fewest, most, res["over"])
    assert res["missed"] >= from_stall          # the stall alone, as above
    # Activations measured + missed cover the run: 1.2 s at 1 ms.
    assert res["count"] + res["missed"] <= 1205
    if mode == "abstime":
        assert 1195 <= res["count"] + res["missed"], (res["count"], res["missed"])
    else:
        # A relative sleep starts after the wake-up, so every period lasts one
        # interval plus that wake-up's latency (lateness under one interval
        # counts no missed period): the periods and latencies add up to the run,
        # less the few microseconds per cycle spent between timestamp and sleep.
        covered_ms = res["count"] * (1 + res["avg_ns"] / MS)
        assert 1200 - 60 <= covered_ms <= 1205, (covered_ms, res["count"], res["avg_ns"])
    # The window that covers the stall shows it; the others do not.
    windows = of_type(recs, "window")
    stalled = [w for w in windows if w["max_ns"] is not None and w["max_ns"] >= 50 * MS]
    assert len(stalled) == 1
    w = stalled[0]
    assert w["t_start_ns"] >= 0.4e9 and w["missed"] >= res["max_ns"] // MS
    assert sum(x["count"] for x in windows) == res["count"]


@pytest.mark.functional
def test_record_stream_shape_and_histogram_consistency(probe):
    recs = run_latency(probe, "--interval-us", "500", "--loops", "400", "--window-s", "0.05",
                       "--threshold-us", "1")
    types = [r["type"] for r in recs]
    assert types[0] == "meta" and types[-1] == "end"
    assert recs[-1]["status"] == "ok"
    meta = recs[0]
    assert meta["schema"] == 1 and meta["subcommand"] == "latency"
    assert meta["params"]["interval_ns"] == 500 * US and meta["params"]["loops"] == 400
    assert set(meta["privileges"]) >= {"policy", "priority", "rt_granted", "mlockall"}
    cpus = meta["params"]["cpus"]
    per_cpu = [r for r in of_type(recs, "result") if r["cpu"] != "all"]
    assert sorted(r["cpu"] for r in per_cpu) == sorted(cpus)
    for r in per_cpu:
        assert r["count"] == 400                      # --loops is per thread
        buckets = r["histogram"]["buckets"]
        assert sum(b[2] for b in buckets) == r["count"]
        assert buckets[0][0] <= r["min_ns"] < buckets[0][1]
        assert buckets[-1][0] <= r["max_ns"] < buckets[-1][1]
        ps = [r[k] for k in ("p50_ns", "p90_ns", "p99_ns", "p999_ns", "p9999_ns", "p99999_ns", "p999999_ns")]
        assert r["min_ns"] <= ps[0] and ps == sorted(ps) and ps[-1] <= r["max_ns"]
        assert r["over"] == {"1000": 400}            # every wake-up is later than 1 us
    res = merged(recs)
    assert res["count"] == 400 * len(cpus)
    assert res["max_ns"] == max(r["max_ns"] for r in per_cpu)
    assert res["min_ns"] == min(r["min_ns"] for r in per_cpu)


def _cyclictest_min_median(path: Path) -> tuple[float, float]:
    """Minimum and median of a cyclictest --json run, in us. cyclictest truncates
    each sample to whole microseconds: a bucket's centre is the fair value."""
    thread = json.loads(path.read_text())["thread"]["0"]
    hist = sorted((int(k), v) for k, v in thread["histogram"].items())
    n, seen = thread["cycles"], 0
    for us_value, count in hist:
        seen += count
        if seen >= (n + 1) // 2:
            return thread["min"] + 0.5, us_value + 0.5
    raise AssertionError(f"cyclictest histogram of {path} holds fewer than {n} cycles")


@pytest.mark.skipif(shutil.which("cyclictest") is None, reason="rt-tests is installed by make setup")
def test_agrees_with_cyclictest(probe, tmp_path):
    """Same priority and loops, nearly the same interval: minimum and median agree.

    The two tools run at the same time on the same CPU, each round compared as a
    pair. A shared machine changes from second to second (on the CI machine
    cyclictest's median went from 12.5 to 31.5 us between rounds run one after
    the other), and two vCPUs of one VM are not alike either (side by side on
    different CPUs, the per-round differences spread 5-7 us; on one CPU 1-3 us).
    cyclictest runs at 1013 us against the probe's 1000 us so that their
    wake-ups drift through each other instead of locking in step: the few that
    nearly coincide delay the second to wake, or spare it the exit from idle
    (which sets both tools' minimum alike), never the median. The verdict is the median of the paired differences over 16
    rounds, the rounds alternating between CPU 0 and 1. Tolerance: 20 % or 3 us,
    whichever is larger (cyclictest truncates to whole microseconds; wake-up
    latency on this VM is 8-25 us). Measured idle and under stress-ng --cpu 4
    --io 2 --vm 1: medians of the differences -0.9..0.7 us (median), -0.6 us (min)."""
    rounds = 16
    d_min, d_med, ct_min, ct_med = [], [], [], []
    for i in range(rounds):
        cpu = i % (os.cpu_count() or 1)
        js = tmp_path / f"ct{i}.json"
        # -d0: without it cyclictest adds its default 500 us distance to the first thread too (1513 us).
        ct = subprocess.Popen(["cyclictest", "-q", "-m", "-p80", "-i1013", "-d0", "-l500", "-t1", f"-a{cpu}",
                               "-h2000", f"--json={js}"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        res = merged(run_latency(probe, "--interval-us", "1000", "--loops", "500", "--cpus", str(cpu),
                                 "--priority", "80"))
        _, err = ct.communicate(timeout=60)
        assert ct.returncode == 0, err
        c_min, c_med = _cyclictest_min_median(js)
        d_min.append(res["min_ns"] / US - c_min)
        d_med.append(res["p50_ns"] / US - c_med)
        ct_min.append(c_min)
        ct_med.append(c_med)

    for name, diffs, theirs in (("min", d_min, ct_min), ("median", d_med, ct_med)):
        tolerance = max(0.2 * statistics.median(theirs), 3.0)
        assert abs(statistics.median(diffs)) <= tolerance, \
            f"{name}: rtvb-probe minus cyclictest per round {diffs} us (cyclictest {theirs} us)"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_ends_run_with_full_result(probe, sig):
    proc = subprocess.Popen([str(probe), "latency", "--interval-us", "1000"], stdout=subprocess.PIPE, text=True)
    time.sleep(0.6)
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=10)
    assert proc.returncode == 0
    recs = records(out)
    assert recs[-1]["type"] == "end" and recs[-1]["status"] == "interrupted"
    res = merged(recs)
    # About 0.6 s at 1 ms per CPU has been measured and is kept.
    n_cpu = len(recs[0]["params"]["cpus"])
    assert 400 * n_cpu <= res["count"] <= 700 * n_cpu
    assert sum(b[2] for b in res["histogram"]["buckets"]) == res["count"]


def interrupted_when(probe: Path, ready, what: str, *args: str) -> tuple[float, dict]:
    """Run `latency ARGS`, SIGINT it once ready(pid, worker tids) holds: (seconds it took to end after
    the signal, its merged result), checking that it ended cleanly as interrupted."""
    proc = subprocess.Popen([str(probe), "latency", *args], stdout=subprocess.PIPE, text=True)
    # meta is printed after SIGINT is blocked for the main thread's sigtimedwait: from here on a
    # SIGINT is a stop request, never the default death.
    meta = proc.stdout.readline()
    workers = len(json.loads(meta)["params"]["cpus"])

    def started() -> list[int] | None:
        tids = threads(proc.pid)[1:]
        return tids if len(tids) == workers and ready(proc.pid, tids) else None

    wait_for(started, 60, what)
    asked = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out = read_to_end(proc, 60)
    took = time.monotonic() - asked
    recs = records(meta + out)
    assert proc.returncode == 0 and recs[-1]["status"] == "interrupted"
    return took, merged(recs)


#: what the two tests below allow a stop to take: the host's grace before it kills a probe, 5 s,
#: far from the 30 s the probe would take if it waited for its deadline or its work.
STOP_GRACE_S = 5.0


@pytest.mark.functional
def test_a_stop_does_not_wait_for_a_deadline_seconds_away(probe):
    """With a 30 s interval the threads sleep most of a run; a SIGINT must end them at once (the host
    kills a probe that has not ended 5 s after it asked), and the samples measured so far are kept."""
    # Signalled once every worker sleeps on its first deadline (not while it starts, before it has).
    took, res = interrupted_when(probe, lambda pid, tids: all(asleep_on_a_timer(pid, t) for t in tids),
                                 "the workers to sleep on their first deadline",
                                 "--interval-us", "30000000", "--policy", "other")
    assert took < STOP_GRACE_S
    assert res["count"] == 0 and res["missed"] == 0     # no deadline came, none was missed


@pytest.mark.functional
def test_a_stop_does_not_wait_for_a_long_work_budget(probe):
    """A 30 s work budget after the first wake-up: the stop ends the work where it is, keeps the
    wake-up measured before it and records no response time for the work it cut short."""
    # Signalled once the worker has used 0.2 s of CPU: calibrating the work takes about 1 ms of it,
    # so it is in the work that follows its first wake-up.
    took, res = interrupted_when(probe, lambda pid, tids: thread_cpu_ns(pid, tids[0]) > 200_000_000,
                                 "the worker to be in its work", "--interval-us", "1000", "--work-us", "30000000",
                                 "--cpus", "0", "--policy", "other")
    assert took < STOP_GRACE_S
    assert res["count"] == 1 and res["deadline_misses"] == 0, res


def _as_nobody(*cmd: str, memlock: int | None = None, rtprio: str = "0") -> list[str]:
    prefix = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    if memlock is not None:
        prefix = ["prlimit", f"--memlock={memlock}", f"--rtprio={rtprio}", *prefix]
    return [*prefix, *cmd]


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping privileges needs root")
@pytest.mark.functional
def test_unprivileged_run_warns_and_still_measures(probe, tmp_path):
    exe = tmp_path / "rtvb-probe"
    shutil.copy(probe, exe)
    exe.chmod(0o755)
    tmp_path.chmod(0o755)
    proc = subprocess.run(_as_nobody(str(exe), "latency", "--loops", "50", "--cpus", "0", memlock=0),
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    recs = records(proc.stdout)
    priv = recs[0]["privileges"]
    assert priv == {**priv, "rt_granted": False, "policy": "other", "priority": 0, "mlockall": False}
    codes = {w["code"] for w in of_type(recs, "warning")}
    assert {"no_rt_policy", "no_mlockall"} <= codes
    assert merged(recs)["count"] == 50


@pytest.mark.parametrize("rtprio, granted", [("0:99", True), ("0:0", False)])
@pytest.mark.parametrize("args", [
    ["latency", "--loops", "20", "--cpus", "0"],
    ["load", "--kind", "timer", "--policy", "fifo", "--priority", "80", "--duration-s", "0.2", "--window-s", "0"],
], ids=["latency", "load"])
@pytest.mark.functional
def test_unprivileged_rt_raises_the_soft_rtprio_limit_up_to_the_hard_one(probe, tmp_path, rtprio, granted, args):
    """Soft RLIMIT_RTPRIO 0 does not stop a user whose hard limit allows the priority (as
    cyclictest, the probe raises the soft limit); hard 0 does, with the no_rt_policy warning."""
    if os.geteuid() != 0:
        pytest.skip("dropping privileges needs root")
    if not (shutil.which("setpriv") and shutil.which("prlimit")):
        pytest.skip("needs setpriv and prlimit (util-linux)")
    if subprocess.run(["prlimit", f"--rtprio={rtprio}", "true"], capture_output=True).returncode != 0:
        pytest.skip(f"cannot set RLIMIT_RTPRIO {rtprio} here (a hard limit above the current one needs "
                    "CAP_SYS_RESOURCE)")
    root = run_latency(probe, "--loops", "1", "--cpus", "0")
    if not root[0]["privileges"]["rt_granted"]:
        pytest.skip("this machine grants no real-time policy even to root")
    exe = tmp_path / "rtvb-probe"
    shutil.copy(probe, exe)
    exe.chmod(0o755)
    tmp_path.chmod(0o755)
    proc = subprocess.run(_as_nobody(str(exe), *args, memlock=0, rtprio=rtprio),
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    recs = records(proc.stdout)
    assert recs[0]["type"] == "meta" and recs[-1]["status"] == "ok"
    priv = recs[0]["privileges"]
    assert priv["rt_granted"] is granted, priv
    assert (priv["policy"], priv["priority"]) == (("fifo", 80) if granted else ("other", 0))
    warned = [w for w in of_type(recs, "warning") if w["code"] == "no_rt_policy"]
    assert len(warned) == (0 if granted else 1), warned


@pytest.mark.functional
def test_root_run_is_granted_rt_without_warnings(probe):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    recs = run_latency(probe, "--loops", "20", "--cpus", "0")
    assert recs[0]["privileges"]["rt_granted"] is True
    assert recs[0]["privileges"]["policy"] == "fifo"
    assert not [w for w in of_type(recs, "warning") if w["code"] in ("no_rt_policy", "no_mlockall")]


@pytest.mark.parametrize("args, fragment", [
    (["--interval-us", "0"], "--interval-us"),
    (["--interval-us", "fast"], "--interval-us"),
    (["--priority", "120"], "--priority"),
    (["--policy", "deadline"], "--policy"),
    (["--cpus", "1-0"], "--cpus"),
    (["--cpus", "4000"], "--cpus"),
    (["--mode", "sometimes"], "--mode"),
    (["--format", "xml"], "--format"),
    (["--window-s", "0"], "--window-s"),
    (["--bogus"], "--bogus"),
    (["--policy", "other", "--priority", "50"], "--policy other"),
    (["extra"], "extra"),
])
@pytest.mark.functional
def test_bad_options_exit_2_with_one_sentence(probe, args, fragment):
    proc = subprocess.run([str(probe), "latency", *args], capture_output=True, text=True, timeout=10)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0] and lines[0].endswith(".")


@pytest.mark.functional
def test_unknown_subcommand_exits_2(probe):
    proc = subprocess.run([str(probe), "frobnicate"], capture_output=True, text=True)
    assert proc.returncode == 2 and "frobnicate" in proc.stderr


STATUS_LINE = re.compile(
    r"^T:\s*(\d+) \(\s*(\d+)\) P:\s*(\d+) I:(\d+) C:\s*(\d+) Min:\s*(\d+) Act:\s*(\d+) Avg:\s*(\d+) Max:\s*(\d+)$")


@pytest.mark.functional
def test_cyclictest_status_lines(probe):
    out = subprocess.run([str(probe), "latency", "--format", "cyclictest", "--loops", "200", "--interval-us", "500"],
                         capture_output=True, text=True, check=True).stdout
    lines = out.strip().splitlines()
    assert lines and all(STATUS_LINE.match(line) for line in lines), out
    for line in lines:
        t, tid, prio, interval, count, mn, act, avg, mx = map(int, STATUS_LINE.match(line).groups())
        assert prio == 80 and interval == 500 and count == 200 and mn <= avg <= mx and mn <= act <= mx


def parse_cyclictest_histogram(text: str) -> dict:
    """Read histogram text the way OSADL's plot scripts and rteval do."""
    rows, summary = {}, {}
    for line in text.splitlines():
        if line.startswith("# ") and ":" in line:
            key, _, values = line[2:].partition(":")
            summary[key] = values.split()
        elif line and not line.startswith("#"):
            first, *counts = line.replace("\t", " ").split()
            rows[int(first)] = [int(c) for c in counts]
    return {"rows": rows, "summary": summary}


@pytest.mark.functional
def test_cyclictest_histogram_text_matches_jsonl_counts(probe):
    out = subprocess.run([str(probe), "latency", "--format", "cyclictest", "--histogram-us", "1000",
                          "--loops", "300", "--cpus", "0"], capture_output=True, text=True, check=True).stdout
    h = parse_cyclictest_histogram(out)
    assert sorted(h["rows"]) == list(range(1000))
    total = sum(r[0] for r in h["rows"].values())
    overflows = int(h["summary"]["Histogram Overflows"][0])
    assert total == int(h["summary"]["Total"][0]) and total + overflows == 300
    assert {"Min Latencies", "Avg Latencies", "Max Latencies", "Thread 0"} <= set(h["summary"])
    mn = int(h["summary"]["Min Latencies"][0])
    assert h["rows"][mn][0] > 0 and all(h["rows"][u][0] == 0 for u in range(mn))


@pytest.mark.skipif(shutil.which("cyclictest") is None, reason="rt-tests is installed by make setup")
@pytest.mark.functional
def test_cyclictest_json_layout_matches_cyclictest(probe, tmp_path):
    js = tmp_path / "ct.json"
    subprocess.run(["cyclictest", "-q", "-m", "-p80", "-i1000", "-l50", "-t1", "-h100", f"--json={js}"],
                   check=True, capture_output=True)
    theirs = json.loads(js.read_text())
    out = subprocess.run([str(probe), "latency", "--format", "cyclictest-json", "--loops", "50", "--cpus", "0",
                          "--histogram-us", "100"], capture_output=True, text=True, check=True).stdout
    ours = json.loads(out)
    assert set(ours) == set(theirs)
    assert set(ours["sysinfo"]) == set(theirs["sysinfo"])
    assert set(ours["thread"]["0"]) == set(theirs["thread"]["0"])
    t = ours["thread"]["0"]
    assert t["cycles"] == 50 and t["min"] <= t["avg"] <= t["max"]
    assert sum(t["histogram"].values()) <= 50


QEMU_USER = {"aarch64": ("qemu-aarch64-static", "aarch64"), "armhf": ("qemu-arm-static", "armv7l"),
             "riscv64": ("qemu-riscv64-static", "riscv64")}


@pytest.mark.parametrize("arch", sorted(QEMU_USER))
def test_cross_built_latency_runs_under_qemu_user_and_sees_a_stall(cross_probes, arch):
    qemu, machine = QEMU_USER[arch]
    if shutil.which(qemu) is None:
        pytest.skip(f"{qemu} is installed by make setup")
    recs, _ = stall_running_probe([qemu, str(cross_probes[arch]), "latency", "--interval-us", "1000",
                                   "--duration-s", "1.0", "--cpus", "0", "--window-s", "0.25"], 0.031)
    assert recs[0]["arch"] == machine and recs[-1] == {**recs[-1], "type": "end", "status": "ok"}
    res = merged(recs)
    # Emulation (and a loaded host) can add much to the resume: the ground
    # truth is the lower bound; the upper one only rules out nonsense.
    assert 30 * MS <= res["max_ns"] < 200 * MS
    assert res["missed"] >= res["max_ns"] // MS
    assert sum(b[2] for b in res["histogram"]["buckets"]) == res["count"]
    assert len(of_type(recs, "window")) >= 4


def test_work_budget_gives_response_times_and_deadline_misses(probe):
    """--work-us: the victim's response time is its wake-up latency plus the
    calibrated work, and a budget beyond the period misses every deadline."""
    recs = run_latency(probe, "--interval-us", "2000", "--loops", "300", "--cpus", "0", "--work-us", "500",
                       "--window-s", "0.2")
    res = merged(recs)
    resp = res["response"]
    assert resp["count"] == res["count"] == 300 and res["work_ns"] == 500_000
    assert sum(b[2] for b in resp["histogram"]["buckets"]) == resp["count"]
    # Calibrated on the fastest run: the work never takes much less than its budget
    # (10 %: a virtual CPU's speed drifts between the calibration and the run; seen
    # once 7 % faster in a full suite run on a shared VM) ...
    assert resp["min_ns"] >= res["min_ns"] + 0.90 * 500_000, (resp["min_ns"], res["min_ns"])
    # ... and typically takes about its budget: the median response is the
    # median wake-up plus 500 us, within 30 % of the work on a shared machine.
    assert abs(resp["p50_ns"] - res["p50_ns"] - 500_000) <= 150_000, (resp["p50_ns"], res["p50_ns"])
    assert res["deadline_misses"] == sum(w["deadline_misses"] for w in of_type(recs, "window"))
    assert all(w["response_max_ns"] >= w["max_ns"] for w in of_type(recs, "window") if w["count"])

    # 1.5 ms of work every 1 ms: every activation overruns its deadline and
    # the activation after it is skipped (counted as missed), never measured late.
    res = merged(run_latency(probe, "--interval-us", "1000", "--loops", "200", "--cpus", "0", "--work-us", "1500"))
    assert res["deadline_misses"] == res["count"] == 200
    assert res["missed"] >= res["count"]
    assert res["p50_ns"] < 500_000, "an overrun leaked into the next wake-up's latency"
