"""End-to-end tests of `rtvb-probe load` (docs/probe/load.md).

Ground truths are independent of the probe's own accounting: the kernel's CPU time of the
probe process (/proc/<pid>/stat utime + stime) for the duty cycle, the resident set
(/proc/<pid>/status VmRSS) for the leak, the file system for the io load's files, the
process table for the fork load's children, the scheduler's view of each thread
(/proc/<pid>/task/<tid>) for pinning and policy.

This VM is shared with other test suites, some of which run real-time stress. Duty-cycle
runs are pinned to the least busy CPU and, when the tests run as root, given a policy that
keeps ordinary tasks from taking their CPU time (FIFO 99 for a partial duty cycle, nice -20
for 100 %); what other tasks still took from that CPU is read from /proc/stat, so the 100 %
case is judged against the CPU time that was left to the load.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from above_other_load import ABOVE_OTHER_LOAD
from helpers.proc_state import read_to_end
from probe_records import of_type, records

MiB = 1 << 20
HZ = os.sysconf("SC_CLK_TCK")
ROOT = os.geteuid() == 0


def run_load(probe: Path, *args: str, prefix: tuple[str, ...] = (), env=None, status: str = "ok") -> list[dict]:
    """Run a load to its end; check the exit code and the meta ... end frame."""
    proc = subprocess.run([*prefix, str(probe), "load", *args], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    return check_frame(records(proc.stdout), status)


def check_frame(recs: list[dict], status: str) -> list[dict]:
    """The meta ... end frame of a load's records."""
    assert recs[0]["type"] == "meta" and recs[0]["subcommand"] == "load" and recs[0]["schema"] == 1
    assert recs[-1]["type"] == "end" and recs[-1]["status"] == status, recs[-1]
    assert all(r["type"] in ("warning", "started", "window", "result") for r in recs[1:-1])
    assert len(of_type(recs, "result")) == 1
    # one `started`, before the first window
    [started] = [i for i, r in enumerate(recs) if r["type"] == "started"]
    assert all(r["type"] != "window" for r in recs[:started])
    return recs


def test_started_comes_once_the_workers_have_prepared(probe):
    # Ground truth: prefaulting a buffer costs time in proportion to its size (every page zeroed by the
    # kernel, at well under 30 GB/s here), so the larger buffer's `started` must come measurably later.
    # A `started` printed before the workers prepared would not see the difference.
    def prepare_ns(size: str) -> int:
        recs = run_load(probe, "--kind", "mem", "--buffer-size", size, "--duration-s", "0.05", "--window-s", "0")
        [started] = of_type(recs, "started")
        return started["prepare_ns"]

    small, large = prepare_ns("8M"), prepare_ns("512M")
    assert large - small > (512 - 8) * MiB / 30e9 * 1e9, (small, large)


def result(recs: list[dict]) -> dict:
    (r,) = of_type(recs, "result")
    return r


class Running:
    """A probe started in its own session, read record by record as it prints."""

    def __init__(self, probe: Path, *args: str, env=None):
        self.proc = subprocess.Popen([str(probe), "load", *args], stdout=subprocess.PIPE, text=True,
                                     start_new_session=True, env=env)
        self.pid = self.proc.pid
        self.lines: list[str] = []

    def next_record(self) -> dict:
        line = self.proc.stdout.readline()
        assert line, "the probe ended early"
        self.lines.append(line)
        return json.loads(line)

    def until(self, pred) -> dict:
        while True:
            r = self.next_record()
            if pred(r):
                return r

    def finish(self, sig: int | None = None) -> list[dict]:
        if sig is not None:
            os.kill(self.pid, sig)
        # Through the file object the records were read with: what it read ahead is not lost.
        out = read_to_end(self.proc, 60)
        return records("".join(self.lines) + out)


def run_load_until(probe: Path, pred, *args: str) -> list[dict]:
    """Run a load until it prints a window that pred accepts, then stop it with SIGTERM, as the host
    does; check the exit code and the frame. What the load did is then seen, not hoped for within a
    duration."""
    run = Running(probe, *args)
    run.until(lambda r: r["type"] == "window" and pred(r))
    recs = run.finish(signal.SIGTERM)
    assert run.proc.returncode == 0
    return check_frame(recs, "interrupted")


def proc_stat(pid: int, tid: int | None = None) -> list[str]:
    """Fields of /proc/<pid>/stat (or of a task) from field 3 (state) on: index i is field i + 3."""
    path = f"/proc/{pid}/stat" if tid is None else f"/proc/{pid}/task/{tid}/stat"
    with open(path) as f:
        return f.read().rsplit(")", 1)[1].split()


def cpu_ticks(pid: int) -> int:
    f = proc_stat(pid)
    return int(f[11]) + int(f[12])   # utime + stime of every thread, in USER_HZ ticks


def cpu_busy_ticks(cpu: int) -> int:
    """Ticks one CPU spent on anything but idle (user nice system irq softirq steal)."""
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith(f"cpu{cpu} "):
                v = [int(x) for x in line.split()[1:]]
                return v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
    raise AssertionError(f"cpu{cpu} not in /proc/stat")


def quietest_cpu() -> int:
    cpus = sorted(os.sched_getaffinity(0))
    a = {c: cpu_busy_ticks(c) for c in cpus}
    time.sleep(0.3)
    return min(cpus, key=lambda c: cpu_busy_ticks(c) - a[c])


def measure_duty(probe: Path, percent: float, policy: tuple[str, ...], seconds: int = 5) -> dict:
    """A cpu load pinned to one CPU with 0.5 s windows. Over windows 1..2*seconds (after the
    first one, so the start is out of it) compare the probe's own figure with the kernel's
    CPU time of the process, and measure what other tasks took from that CPU."""
    cpu = quietest_cpu()
    n = 2 * seconds
    run = Running(probe, "--kind", "cpu", "--percent", str(percent), "--cpus", str(cpu), "--window-s", "0.5",
                  "--duration-s", str(0.5 * n + 0.7), *policy)
    meta = run.next_record()
    assert meta["type"] == "meta"
    run.until(lambda r: r["type"] == "window" and r["index"] == 0)
    t0, p0, c0 = time.monotonic(), cpu_ticks(run.pid), cpu_busy_ticks(cpu)
    run.until(lambda r: r["type"] == "window" and r["index"] == n)
    t1, p1, c1 = time.monotonic(), cpu_ticks(run.pid), cpu_busy_ticks(cpu)
    recs = run.finish()
    assert run.proc.returncode == 0 and recs[-1]["status"] == "ok"
    wins = [w for w in of_type(recs, "window") if 1 <= w["index"] <= n]
    assert len(wins) == n
    span = sum(w["t_end_ns"] - w["t_start_ns"] for w in wins)
    own = sum(w["achieved_percent"] * (w["t_end_ns"] - w["t_start_ns"]) for w in wins) / span
    wall = t1 - t0
    proc = 100 * (p1 - p0) / HZ / wall
    others = 100 * ((c1 - c0) - (p1 - p0)) / HZ / wall
    return {"proc": proc, "own": own, "others": max(others, 0.0), "cpu": cpu, "recs": recs, "meta": meta}


RT_POLICY = ("--policy", "fifo", "--priority", "99") if ROOT else ()
TOP_NICE = ("--nice", "-20") if ROOT else ()


def test_cpu_50_percent_duty_cycle_matches_the_kernels_cpu_time(probe):
    """Issue 5: 50 % on one CPU, measured from /proc over 5 s, is 50 +- 5 %; the probe's own
    achieved_percent agrees with /proc within 3 points. Measured: 50.0-50.2 % (/proc),
    own figure within 0.2 of it."""
    m = measure_duty(probe, 50, RT_POLICY)
    if not ROOT and m["others"] > 45:
        pytest.skip(f"other tasks took {m['others']:.0f} % of CPU {m['cpu']}; a 50 % load cannot be judged")
    assert abs(m["proc"] - 50) <= 5, m["proc"]
    assert abs(m["own"] - m["proc"]) <= 3, (m["own"], m["proc"])


def test_cpu_0_percent_duty_cycle_uses_no_cpu(probe):
    m = measure_duty(probe, 0, (), seconds=2)
    assert m["proc"] < 2 and m["own"] < 2, m


def test_cpu_100_percent_duty_cycle_takes_all_the_cpu_left(probe):
    """Issue 5: 100 % is > 95 %. A 100 % load at nice -20 takes everything ordinary tasks
    would; what real-time tasks and interrupts of other suites still took is read from
    /proc/stat, and the load must hold > 95 % of the rest (on a quiet CPU: > 95 % of all)."""
    m = measure_duty(probe, 100, TOP_NICE)
    left = 100 - m["others"]
    if left < 25:
        pytest.skip(f"other tasks took {m['others']:.0f} % of CPU {m['cpu']}; a 100 % load cannot be judged")
    assert m["proc"] > 0.95 * left, (m["proc"], m["others"])
    assert abs(m["own"] - m["proc"]) <= 3, (m["own"], m["proc"])


@pytest.mark.functional
def test_cpu_load_workers_are_pinned_round_robin_with_the_policy_asked(probe):
    cpus = sorted(os.sched_getaffinity(0))
    policy = ("--policy", "rr", "--priority", "7") if ROOT else ("--policy", "batch", "--nice", "5")
    run = Running(probe, "--kind", "cpu", "--percent", "10", "--workers", "3", "--cpus", ",".join(map(str, cpus)),
                  "--window-s", "0.2", "--method", "matrix", *policy)
    meta = run.next_record()
    first = run.until(lambda r: r["type"] == "window")
    for w in first["workers"]:
        with open(f"/proc/{run.pid}/task/{w['tid']}/status") as f:
            allowed = [line.split()[1] for line in f if line.startswith("Cpus_allowed_list:")][0]
        assert w["cpu"] == cpus[w["worker"] % len(cpus)] and allowed == str(w["cpu"]), (w, allowed)
        f = proc_stat(run.pid, w["tid"])
        sched_policy, rt_priority, nice = int(f[38]), int(f[37]), int(f[16])
        if ROOT:
            assert (sched_policy, rt_priority) == (2, 7)      # SCHED_RR
        else:
            assert (sched_policy, nice) == (3, 5)             # SCHED_BATCH
    run.until(lambda r: r["type"] == "window" and r["ops"] > 0)     # it has computed: ops > 0 below
    recs = run.finish(signal.SIGTERM)
    assert run.proc.returncode == 0 and recs[-1]["status"] == "interrupted"
    p = meta["params"]
    assert (p["kind"], p["workers"], p["percent"], p["period_ns"], p["method"], p["busy_clock"]) == \
        ("cpu", 3, 10, 100_000_000, "matrix", "thread")
    assert p["cpus"] == cpus and meta["privileges"]["policy"] == ("rr" if ROOT else "batch")
    res = result(recs)
    assert [(w["worker"], w["role"]) for w in res["workers"]] == [(0, "worker"), (1, "worker"), (2, "worker")]
    # The result is the sum of the windows (they tile the run).
    wins = of_type(recs, "window")
    assert [w["index"] for w in wins] == list(range(len(wins)))
    assert res["cpu_time_ns"] == sum(w["cpu_time_ns"] for w in wins)
    assert res["ops"] == sum(w["ops"] for w in wins) > 0


# --- leak ------------------------------------------------------------------------------------------

def vm_rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_leak_grows_at_its_rate_then_holds_at_its_limit(probe):
    """32 MiB/s up to 64 MiB: RSS (from /proc, sampled every 50 ms) grows at 32 MiB/s +- 25 %
    between a quarter and three quarters of the limit, then stays flat at the limit."""
    run = Running(probe, "--kind", "leak", "--rate-mbps", "32", "--limit", "64M", "--window-s", "0.5")
    run.next_record()
    base = vm_rss(run.pid)
    samples = []
    t_start = time.monotonic()
    while time.monotonic() - t_start < 3.5:
        samples.append((time.monotonic() - t_start, vm_rss(run.pid) - base))
        time.sleep(0.05)
    recs = run.finish(signal.SIGTERM)
    limit = 64 * MiB
    growth = [(t, r) for t, r in samples if limit / 4 <= r <= 3 * limit / 4]
    assert len(growth) >= 5, samples
    (ta, ra), (tb, rb) = growth[0], growth[-1]
    rate = (rb - ra) / (tb - ta)
    assert 0.75 * 32 * MiB <= rate <= 1.25 * 32 * MiB, rate / MiB
    # Reached after ~2 s; from 2.5 s on, flat at the limit (+- a few MiB of the probe's own).
    held = [r for t, r in samples if t >= 2.5]
    assert held and all(abs(r - limit) <= 3 * MiB for r in held), [r / MiB for r in held]
    assert max(r for _, r in samples) <= limit + 3 * MiB
    res = result(recs)
    assert res["leaked_bytes"] == limit and res["holding"] is True
    assert 1.6e9 <= res["limit_reached_ns"] <= 2.6e9, res["limit_reached_ns"]
    wins = of_type(recs, "window")
    assert wins[0]["holding"] is False and 0.75 * 32 * MiB <= wins[0]["achieved_bps"] <= 1.25 * 32 * MiB
    assert wins[-1]["holding"] is True and wins[-1]["bytes"] == 0


# --- io --------------------------------------------------------------------------------------------

@pytest.mark.functional
def test_io_load_files_are_removed_after_its_duration(probe, tmp_path):
    recs = run_load(probe, "--kind", "io", "--dir", str(tmp_path), "--file-size", "1M", "--block-size", "256K",
                    "--duration-s", "1.3", "--window-s", "0.5", "--workers", "2")
    p = recs[0]["params"]
    assert Path(p["dir"]).parent == tmp_path and p["parent_dir"] == str(tmp_path)
    assert (p["file_size_bytes"], p["block_size_bytes"], p["fsync"], p["drop_cache"]) == (MiB, 256 << 10, True, False)
    assert list(tmp_path.iterdir()) == []
    res = result(recs)
    # How many cycles fit in 1.3 s is the machine's business (that cycles are made is seen in the
    # SIGTERM test below); their counters agree whatever their number. Every cycle writes the whole
    # file, fsyncs it and reads it back; the stop may cut each worker's last cycle short.
    assert res["bytes"] == res["bytes_written"] + res["bytes_read"]
    assert res["ops"] <= res["fsyncs"] <= res["ops"] + 2
    assert res["fsyncs"] * MiB <= res["bytes_written"] <= (res["fsyncs"] + 2) * MiB
    assert res["ops"] * MiB <= res["bytes_read"] < (res["ops"] + 2) * MiB
    wins = of_type(recs, "window")
    assert res["bytes"] == sum(w["bytes"] for w in wins)
    for w in wins:
        assert w["achieved_bps"] == pytest.approx(w["bytes"] * 1e9 / (w["t_end_ns"] - w["t_start_ns"]), rel=1e-6)


@pytest.mark.functional
def test_io_load_files_are_removed_after_sigterm_in_the_default_tmpdir(probe, tmp_path):
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    run = Running(probe, "--kind", "io", "--file-size", "2M", "--window-s", "0.2", env=env)
    meta = run.next_record()
    d = Path(meta["params"]["dir"])
    run.until(lambda r: r["type"] == "window" and r["ops"] > 0)   # a whole cycle is done
    assert d.parent == tmp_path and sorted(x.name for x in d.iterdir()) == ["worker-0.dat"]
    recs = run.finish(signal.SIGTERM)
    assert run.proc.returncode == 0 and recs[-1]["status"] == "interrupted"
    assert not d.exists() and list(tmp_path.iterdir()) == []
    res = result(recs)
    assert res["ops"] > 0 and res["ops"] * 2 * MiB <= res["bytes_read"] < (res["ops"] + 1) * 2 * MiB


# --- fork ------------------------------------------------------------------------------------------

def group_members(pgid: int) -> list[tuple[int, str]]:
    """(pid, state) of every process of a process group."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                f = proc_stat(int(d))
            except OSError:
                continue
            if int(f[2]) == pgid:
                out.append((int(d), f[0]))
    return out


def wait_for(pred, timeout: float = 3.0):
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() > end:
            return v
        time.sleep(0.05)


@pytest.mark.functional
def test_fork_load_leaves_no_child_after_sigterm(probe):
    run = Running(probe, "--kind", "fork", "--workers", "2", "--window-s", "0.3")
    win = run.until(lambda r: r["type"] == "window" and r["ops"] > 0)     # it is forking
    assert win["fork_failures"] == 0
    assert win["achieved_ops_per_s"] == pytest.approx(win["ops"] * 1e9 / (win["t_end_ns"] - win["t_start_ns"]))
    # Children are reaped as they go: never more than one per worker at a time.
    assert len([p for p, _ in group_members(run.pid) if p != run.pid]) <= 2
    recs = run.finish(signal.SIGTERM)
    assert run.proc.returncode == 0 and recs[-1]["status"] == "interrupted"
    assert wait_for(lambda: group_members(run.pid) == [], 30), group_members(run.pid)
    assert result(recs)["ops"] > 0


@pytest.mark.functional
def test_fork_load_leaves_no_running_child_after_sigkill(probe):
    """Children of a SIGKILLed probe die with it (PR_SET_PDEATHSIG); their zombies belong
    to init then (this container's init does not reap: at most one per worker may stay)."""
    run = Running(probe, "--kind", "fork", "--workers", "2", "--window-s", "0.3")
    run.until(lambda r: r["type"] == "window")
    os.kill(run.pid, signal.SIGKILL)
    run.proc.wait(timeout=10)
    live = wait_for(lambda: not [p for p, s in group_members(run.pid) if s not in "ZX"], 30)
    assert live, group_members(run.pid)
    assert len(group_members(run.pid)) <= 2


def test_fork_load_holds_its_rate(probe):
    res = result(run_load(probe, "--kind", "fork", "--rate", "200", "--workers", "2", "--duration-s", "1.5",
                          "--window-s", "0"))
    assert 180 <= res["achieved_ops_per_s"] <= 220, res["achieved_ops_per_s"]


# --- mem, cache, net, timer ------------------------------------------------------------------------

def check_rates(recs: list[dict]) -> dict:
    """Windows tile the run; rates are their counters over their spans; the result sums them. (A window
    may hold no bytes: one its workers were kept off the CPU for, or the short last one.)"""
    res = result(recs)
    wins = of_type(recs, "window")
    assert wins and res["bytes"] == sum(w["bytes"] for w in wins) > 0
    for w in wins + [res]:
        span = w["t_end_ns"] - w["t_start_ns"] if w["type"] == "window" else w["elapsed_ns"]
        assert w["achieved_bps"] >= 0
        assert w["achieved_bps"] == pytest.approx(w["bytes"] * 1e9 / span, rel=1e-6)
        assert w["bytes"] == sum(t["bytes"] for t in w["workers"])
    return res


@pytest.mark.functional
def test_mem_load_reports_bandwidth_consistent_with_its_passes(probe):
    # Stopped once both workers have made a pass: the figures below are checked against each
    # other, not against a bandwidth (test_mem_load_bps_limit_holds holds one to its limit).
    passes: dict[int, int] = {}

    def both_passed(win: dict) -> bool:
        for t in win["workers"]:
            passes[t["worker"]] = passes.get(t["worker"], 0) + t["passes"]
        return len(passes) == 2 and all(passes.values())

    recs = run_load_until(probe, both_passed, "--kind", "mem", "--buffer-size", "16M", "--workers", "2",
                          "--window-s", "0.5")
    res = check_rates(recs)
    assert recs[0]["params"]["op"] == "copy" and recs[0]["params"]["buffer_size_bytes"] == 16 * MiB
    # copy: each pass reads one half and writes the other, 16 MiB of traffic per pass.
    for w in res["workers"]:
        assert w["passes"] == w["bytes"] // (16 * MiB) > 0, w


def test_mem_load_bps_limit_holds(probe):
    res = result(run_load(probe, "--kind", "mem", "--op", "write", "--buffer-size", "4M", "--bps-limit", "200M",
                          "--duration-s", "1", "--window-s", "0"))
    assert 0.9 * 200 * MiB <= res["achieved_bps"] <= 1.1 * 200 * MiB, res["achieved_bps"]


@pytest.mark.functional
def test_net_load_delivers_what_it_sends_over_loopback(probe):
    recs = run_load_until(probe, lambda w: w["bytes"] > 0, "--kind", "net", "--workers", "2", "--window-s", "0.5")
    res = check_rates(recs)
    p = recs[0]["params"]
    assert p["address"] == "127.0.0.1" and 0 < p["port"] < 65536
    assert [(w["worker"], w["role"]) for w in res["workers"]] == \
        [(0, "sender"), (0, "receiver"), (1, "sender"), (1, "receiver")]
    # Received <= sent, the difference in flight in the socket buffers (a few MiB at most).
    assert 0 <= res["bytes_sent"] - res["bytes"] <= 32 * MiB


def test_net_load_bps_limit_holds(probe):
    res = result(run_load(probe, "--kind", "net", "--bps-limit", "20M", "--duration-s", "1", "--window-s", "0"))
    assert 0.9 * 20 * MiB <= res["achieved_bps"] <= 1.1 * 20 * MiB, res["achieved_bps"]


def sysfs_llc(cpu: int = 0) -> int | None:
    """Size of the highest-level data/unified cache of a CPU, read independently here."""
    base = Path(f"/sys/devices/system/cpu/cpu{cpu}/cache")
    best = (0, None)
    for idx in sorted(base.glob("index*")) if base.exists() else []:
        try:
            if (idx / "type").read_text().strip() not in ("Data", "Unified"):
                continue
            level, size = int((idx / "level").read_text()), (idx / "size").read_text().strip()
        except OSError:
            continue
        mult = {"K": 1024, "M": MiB, "G": 1024 * MiB}.get(size[-1], 1)
        value = int(size.rstrip("KMG")) * mult
        if level >= best[0]:
            best = (level, value)
    return best[1]


@pytest.mark.functional
def test_cache_load_buffer_is_twice_the_llc(probe):
    recs = run_load_until(probe, lambda w: w["bytes"] > 0, "--kind", "cache", "--window-s", "0.2")
    p = recs[0]["params"]
    llc = sysfs_llc()
    if llc is None:
        assert (p["buffer_size_source"], p["buffer_size_bytes"], p["llc_bytes"]) == ("default", 32 * MiB, None)
        assert [w["code"] for w in of_type(recs, "warning")] == ["llc_unknown"]
    else:
        assert (p["buffer_size_source"], p["buffer_size_bytes"], p["llc_bytes"]) == ("llc", 2 * llc, llc)
    res = check_rates(recs)
    assert res["bytes"] == res["ops"] * p["line_size_bytes"]
    given = run_load(probe, "--kind", "cache", "--buffer-size", "8M", "--duration-s", "0.2", "--window-s", "0")
    assert (given[0]["params"]["buffer_size_source"], given[0]["params"]["buffer_size_bytes"]) == ("option", 8 * MiB)


def test_timer_load_holds_a_modest_rate(probe):
    """2000 Hz over 2 workers: within 10 %. Measured: 1991.7/s (SCHED_OTHER), 1998.3/s (FIFO);
    at FIFO 99 the real-time stress of other suites on this VM cannot delay the wake-ups."""
    recs = run_load(probe, "--kind", "timer", "--rate-hz", "2000", "--workers", "2", "--duration-s", "2",
                    "--window-s", "0.5", *RT_POLICY)
    res = result(recs)
    assert 1800 <= res["achieved_ops_per_s"] <= 2200, res["achieved_ops_per_s"]
    assert recs[0]["params"]["interval_ns"] == 1_000_000   # 2 workers at 1 kHz each
    assert res["late_max_ns"] >= res["late_avg_ns"] >= 0
    for w in of_type(recs, "window"):
        assert w["achieved_ops_per_s"] == pytest.approx(w["ops"] * 1e9 / (w["t_end_ns"] - w["t_start_ns"]))


@pytest.mark.functional
def test_sched_load_answers_every_message_it_counts(probe):
    """Two ping-pong pairs: the windows tile the run and add up to the result, and at the end each
    pong has answered exactly the round trips its ping counted, or one more (the answer on its way
    back when the load stopped): no message lost or counted twice."""
    recs = run_load_until(probe, lambda w: w["ops"] > 0, "--kind", "sched", "--workers", "2", "--msg-size", "64",
                          "--window-s", "0.2")
    res = result(recs)
    assert (recs[0]["params"]["msg_size_bytes"], recs[0]["params"]["transport"]) == (64, "pipe")
    assert [(w["worker"], w["role"]) for w in res["workers"]] == [(0, "ping"), (0, "pong"), (1, "ping"), (1, "pong")]
    wins = of_type(recs, "window")
    assert res["ops"] == sum(w["ops"] for w in wins) > 0
    assert res["answered"] == sum(w["answered"] for w in wins)
    for w in wins:
        assert w["achieved_ops_per_s"] == pytest.approx(w["ops"] * 1e9 / (w["t_end_ns"] - w["t_start_ns"]))
    for worker in (0, 1):
        ping, pong = (t for t in res["workers"] if t["worker"] == worker)
        assert ping["answered"] == 0 and pong["ops"] == 0
        assert pong["answered"] - ping["ops"] in (0, 1), (ping, pong)


def test_sched_load_round_trip_is_the_os_pipe_round_trip(probe):
    """A pinned pair's round trip (the run over its round trips) against `os --tests pipe_lat`, the
    probe's pipe round trip between two processes on the same CPU: the same two wake-ups and
    context switches, between threads rather than processes. Both run above other load (the
    load's threads set their own policy, so it asks for FIFO; as an ordinary thread beside
    stress-ng --cpu 2 the pair got half its CPU and the ratio read 1.9). Measured on this VM,
    ratios 0.99-1.0 quiet and 0.96-1.01 beside stress-ng --cpu 2 (4.3-4.7 us each). Median of three
    alternated rounds in [0.67, 1.5]: it fails on a load that counts a message as a round trip (or
    a round trip twice), or does not wait for the answer."""
    cpu = quietest_cpu()
    ratios = []
    for _ in range(3):
        res = result(run_load(probe, "--kind", "sched", "--cpus", str(cpu), "--duration-s", "0.25", "--window-s", "0",
                              *RT_POLICY))
        load_rt_ns = res["elapsed_ns"] / res["ops"]
        os_run = subprocess.run([*ABOVE_OTHER_LOAD, str(probe), "os", "--tests", "pipe_lat", "--pair-cpus", str(cpu),
                                 "--quick"], capture_output=True, text=True, timeout=60)
        assert os_run.returncode == 0, os_run.stderr
        [pipe] = [r for r in records(os_run.stdout) if r["type"] == "result"]
        ratios.append(load_rt_ns / pipe["ns_per_op"])
    assert 0.67 <= sorted(ratios)[1] <= 1.5, ratios


# --- errors and portability ------------------------------------------------------------------------

@pytest.mark.parametrize("args, fragment", [
    ([], "--kind is required"),
    (["--kind", "gpu"], "--kind"),
    (["--kind", "cpu", "--percent", "101"], "--percent"),
    (["--kind", "cpu", "--period-ms", "0"], "--period-ms"),
    (["--kind", "cpu", "--method", "fft"], "--method"),
    (["--kind", "mem", "--percent", "50"], "does not apply to --kind mem"),
    (["--kind", "cpu", "--buffer-size", "64M"], "does not apply to --kind cpu"),
    (["--kind", "mem", "--buffer-size", "lots"], "--buffer-size"),
    (["--kind", "mem", "--buffer-size", "auto"], "auto"),
    (["--kind", "leak", "--workers", "2"], "one worker"),
    (["--kind", "leak", "--limit", "0"], "--limit"),
    (["--kind", "io", "--dir", "/nonexistent/rtvb"], "--dir"),
    (["--kind", "io", "--file-size", "4K", "--block-size", "8K"], "--block-size"),
    (["--kind", "timer", "--rate-hz", "0"], "--rate-hz"),
    (["--kind", "fork", "--rate", "-1"], "--rate"),
    (["--kind", "sched", "--msg-size", "8K"], "--msg-size"),
    (["--kind", "net", "--msg-size", "64"], "does not apply to --kind net"),
    (["--kind", "cpu", "--policy", "fifo"], "--priority"),
    (["--kind", "cpu", "--priority", "10"], "--priority"),
    (["--kind", "cpu", "--nice", "20"], "--nice"),
    (["--kind", "cpu", "--cpus", "5000"], "--cpus"),
    (["--kind", "cpu", "--workers", "0"], "--workers"),
    (["--kind", "cpu", "--window-s", "0.001"], "--window-s"),
    (["--kind", "cpu", "--frobnicate"], "--frobnicate"),
    (["--kind", "cpu", "extra"], "extra"),
])
@pytest.mark.functional
def test_bad_options_exit_2_with_one_sentence(probe, args, fragment):
    proc = subprocess.run([str(probe), "load", *args], capture_output=True, text=True, timeout=10)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rtvb-probe load: ") and fragment in lines[0] \
        and lines[0].endswith("."), lines


@pytest.mark.functional
def test_unwritable_io_dir_is_an_environment_error_with_records(probe, tmp_path):
    if ROOT:
        pytest.skip("root can write anywhere")
    tmp_path.chmod(0o500)
    proc = subprocess.run([str(probe), "load", "--kind", "io", "--dir", str(tmp_path), "--duration-s", "0.2"],
                          capture_output=True, text=True, timeout=10)
    assert proc.returncode == 3
    recs = records(proc.stdout)
    assert recs[0]["type"] == "meta" and recs[-1]["status"] == "error" and "--dir" in recs[-1]["error"]


def test_cross_built_cpu_load_runs_under_qemu_user(cross_probes):
    if shutil.which("qemu-aarch64-static") is None:
        pytest.skip("qemu-aarch64-static is installed by make setup")
    recs = run_load(cross_probes["aarch64"], "--kind", "cpu", "--percent", "50", "--duration-s", "1",
                    "--window-s", "0.25", *RT_POLICY, prefix=("qemu-aarch64-static",))
    assert recs[0]["arch"] == "aarch64"
    wins = of_type(recs, "window")
    assert len(wins) >= 4
    res = result(recs)
    assert res["cpu_time_ns"] == sum(w["cpu_time_ns"] for w in wins)
    # Emulated: the duty cycle still holds, loosely (measured 49.7 %); without a real-time
    # policy, other tasks of this shared host may take the emulator's CPU time.
    assert (35 if ROOT else 0) < res["achieved_percent"] <= 65, res["achieved_percent"]
