"""The kernel's timerlat, osnoise and hwlat tracers (`rtvb-probe kernel-tracer`, kind `kernel-tracer`).

This machine's kernel has neither tracer: the probe must say so in one sentence and exit 3. Debian's
PREEMPT_RT kernel has both, so a campaign boots it in a qemu guest and runs each tracer there; the
summaries are checked against what the tracers guarantee: timerlat's thread latency includes its IRQ
latency for every activation (so every percentile of the thread latency is at least the IRQ's),
one activation per period per CPU; osnoise accounts whole periods of runtime, and the available share
is exactly 1 - noise / runtime. Ground truth: a SCHED_FIFO 99 load of known bursts on one CPU shows up as
that many late thread activations there, and not in the interrupt latencies or on the other CPU; a
SCHED_FIFO 99 timer load shows up as one osnoise thread event per wake-up on its CPU. hwlat, first in
the campaign as the tuning flow reads: a guest whose QEMU process is stopped on the host (SIGSTOP) for a known time
while hwlat spins reports a gap of at least that time, at most one per stop. (QEMU's monitor `stop`, the
`Pausing` capability, would not do: it stops the guest's clocks with its vCPUs, so the guest sees no gap.)
"""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from host_helpers import REPO, cli_env, run_cli
from probe_records import of_type, records
from rtvbench.campaign.reader import parse_campaign
from rtvbench.store import load_run, open_store

RT_KERNEL = REPO / "kernels" / "x86_64-rt" / "vmlinuz"


def _host_has(tracer: str) -> bool:
    try:
        return tracer in Path("/sys/kernel/tracing/available_tracers").read_text().split()
    except OSError:
        return False


@pytest.mark.skipif(_host_has("timerlat"), reason="this kernel has timerlat")
@pytest.mark.functional
@pytest.mark.parametrize("tracer", ["timerlat", "hwlat"])
def test_a_kernel_without_the_tracer_is_one_sentence_and_exit_3(probe, tracer):
    if _host_has(tracer):
        pytest.skip(f"this kernel has {tracer}")
    proc = subprocess.run([str(probe), "kernel-tracer", "--tracer", tracer, "--duration-s", "1"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 3
    assert proc.stderr.count("\n") == 1 and f"has no {tracer} tracer" in proc.stderr, proc.stderr
    recs = records(proc.stdout)
    assert recs[0]["type"] == "meta" and recs[-1]["type"] == "end" and recs[-1]["status"] == "error"
    assert f"CONFIG_{tracer.upper()}_TRACER" in recs[-1]["error"] and not of_type(recs, "result")


@pytest.mark.functional
def test_options_are_checked(probe):
    for args, fragment in ((["--tracer", "wakeup", "--duration-s", "1"], "--tracer"),
                           (["--tracer", "osnoise"], "needs --duration-s"),
                           (["--duration-s", "1", "--period-us", "50"], "--period-us"),
                           (["--tracer", "hwlat", "--duration-s", "1", "--window-us", "2000", "--width-us", "2000"],
                            "--width-us must be below --window-us")):
        proc = subprocess.run([str(probe), "kernel-tracer", *args], capture_output=True, text=True, timeout=10)
        assert proc.returncode == 2 and fragment in proc.stderr and proc.stdout == "", proc.stderr


@pytest.mark.functional
def test_a_width_not_below_the_window_is_refused_by_validate(tmp_path):
    (tmp_path / "c.toml").write_text('name = "w"\n[environments.here]\ntarget = "local"\n'
                                     '[benchmarks.hw]\nkind = "kernel-tracer"\ntracer = "hwlat"\n'
                                     'window_us = 100000\nwidth_us = 100000\n')
    r = run_cli("validate", "c.toml", cwd=tmp_path, env=cli_env())
    assert r.returncode == 2 and "width_us (100000) must be below window_us (100000)" in r.stderr, r.stderr


CAMPAIGN = f"""
name = "kernel-tracers"
repetitions = 1

[environments.rt_guest]
target = "qemu"
arch = "x86_64"
kernel = "{RT_KERNEL}"
cpus = 2

[loads.idle]

[loads.rt_burst]          # 10 ms of spinning every 50 ms on CPU 1, above timerlat's own threads (FIFO 95)
kind = "cpu"
percent = 20
period_ms = 50
policy = "fifo"
priority = 99
workers = 1
cpus = "1"

[loads.rt_ticks]          # 500 wake-ups/s on CPU 1 above osnoise's thread, each a preemption by a thread
kind = "timer"
rate_hz = 500
policy = "fifo"
priority = 99
workers = 1
cpus = "1"

[benchmarks.hwlat]        # the tuning flow: hardware first, then wake-ups, then noise
kind = "kernel-tracer"
tracer = "hwlat"
duration_s = 3
window_us = 500000
width_us = 250000

[benchmarks.timerlat]
kind = "kernel-tracer"
tracer = "timerlat"
duration_s = 2
period_us = 1000

[benchmarks.osnoise]
kind = "kernel-tracer"
tracer = "osnoise"
duration_s = 3

[benchmarks.wakeup]       # trace capture on the PREEMPT_RT kernel too
kind = "latency"
interval_us = 1000
duration_s = 1
trace_threshold_us = 300
trace_breaches = 3
"""


def _rt_kernel_dir(tmp_path_factory, name: str):
    """A directory for a test that boots the PREEMPT_RT kernel; skips where there is none."""
    if not RT_KERNEL.is_file():
        pytest.skip("no PREEMPT_RT kernel in kernels/ (make kernels)")
    return tmp_path_factory.mktemp(name)


@pytest.fixture(scope="module")
def rt_run(probe, tmp_path_factory):
    tmp = _rt_kernel_dir(tmp_path_factory, "ktracer")
    (tmp / "c.toml").write_text(CAMPAIGN)
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", "--export-json", "r.json", cwd=tmp,
                env=cli_env(probe), timeout=300)
    assert r.returncode == 0, r.stderr
    store = open_store(f"sqlite:///{tmp}/s.db")
    run = load_run(store, 1)
    return run, json.loads((tmp / "r.json").read_text()), tmp


def _results(run, bench: str, load: str = "idle") -> dict:
    (m,) = [m for m in run.measurements if m.benchmark == bench and m.load == load]
    assert m.status == "ok", m.error
    return {r["cpu"]: r for r in m.results}


def test_timerlat_thread_latency_contains_the_irq_latency(rt_run):
    run, _, _ = rt_run
    results = _results(run, "timerlat")
    assert set(results) == {0, 1, "all"}
    for cpu in (0, 1):
        r = results[cpu]
        irq, thread = r["irq"], r["thread"]
        # At most one activation per period per CPU (an emulated guest loses many to its own slowness).
        assert 100 <= irq["count"] <= 2000 * 1.01, irq["count"]
        assert abs(thread["count"] - irq["count"]) <= 2
        for stat in ("min_ns", "p50_ns", "p90_ns", "p99_ns", "max_ns"):
            assert thread[stat] >= irq[stat] * 0.99, (cpu, stat, irq[stat], thread[stat])
    assert results["all"]["irq"]["count"] == results[0]["irq"]["count"] + results[1]["irq"]["count"]


def test_osnoise_accounts_whole_periods(rt_run):
    run, _, _ = rt_run
    results = _results(run, "osnoise")
    for cpu in (0, 1):
        r = results[cpu]
        assert r["count"] >= 2 and r["runtime_ns"] == pytest.approx(r["count"] * 1e9, rel=0.02)
        assert 0 <= r["noise_ns"] <= r["runtime_ns"] and r["max_single_noise_ns"] <= r["noise_ns"]
        assert r["available_percent"] == pytest.approx(100 * (1 - r["noise_ns"] / r["runtime_ns"]), abs=1e-6)
        assert r["irq_events"] > 0           # the tick at least


def test_the_figures_reach_the_report_and_the_tracer_threads_are_the_measurements_own(rt_run):
    run, doc, _ = rt_run
    summarized = {(s["benchmark"], s["figure"]) for s in doc["summaries"]}
    for figure in ("timerlat.irq_p99_us", "timerlat.thread_max_us", "timerlat.cpu1.thread_p99_us",
                   "osnoise.noise_percent", "osnoise.max_single_noise_us", "osnoise.cpu0.hw_events"):
        assert tuple(figure.split(".", 1)) in summarized, figure
    # The osnoise threads keep every CPU busy for the whole run: that is the measurement, not foreign
    # load. Counted as foreign it would be nearly all of the CPUs' time; what remains is the emulated
    # guest's own kernel work (0.6 to 10 % seen). (Under a load, in a guest, it is not judged.)
    (osnoise,) = [m for m in doc["measurements"] if m["benchmark"] == "osnoise" and m["load"] == "idle"]
    assert osnoise["conditions"]["judged"] and osnoise["conditions"]["foreign_percent"] < 30, osnoise["conditions"]


def test_spikes_on_the_rt_kernel_are_traced_and_explained(rt_run):
    run, doc, _ = rt_run
    (m,) = [m for m in run.measurements if m.benchmark == "wakeup" and m.load == "idle"]
    assert m.meta["privileges"]["trace"] is True
    assert 1 <= len(m.traces) <= 3
    (cell,) = [c for c in _spikes(doc)["wakeup"] if c["load"] == "idle"]
    assert cell["traced"] == len(m.traces)
    assert all(s["cause"] != "unknown" and s["excerpt"] for s in cell["spikes"]), cell["spikes"]


def _spikes(doc):
    stack = [doc]
    while stack:
        d = stack.pop()
        if isinstance(d, dict):
            if isinstance(d.get("spikes"), dict):
                return d["spikes"]
            stack.extend(d.values())
        elif isinstance(d, list):
            stack.extend(d)
    return None


def _above(r: dict, context: str, ns: int) -> int:
    """Activations of one CPU's result whose latency was at least ns (from the histogram)."""
    return sum(count for lo, _, count in r[context]["histogram"]["buckets"] if lo >= ns)


def test_a_real_time_burst_delays_timerlats_thread_not_its_interrupt(rt_run):
    """Ground truth: a SCHED_FIFO 99 load that spins 10 ms of every 50 ms on CPU 1 runs above timerlat's
    thread (FIFO 95) but cannot hold back its timer interrupt. In the 2 s run that is 40 bursts, and each
    leaves one activation whose thread waited for the rest of the burst (timerlat does not queue the
    periods in between); the interrupt latencies stay as without the load. CPU 0 is not touched."""
    run, _, _ = rt_run
    idle, burst = _results(run, "timerlat"), _results(run, "timerlat", "rt_burst")
    bursts = 40
    late = _above(burst[1], "thread", 5_000_000)
    # Beyond the bursts, CPU 1 may have as many late activations as the host's stalls of this VM give
    # one CPU: seen on CPU 1 in the idle run or on CPU 0 in this one, whichever host was busier (the
    # host's load moves between the two measurements: once 36 late ones idle against 83 under the bursts).
    host_stalls = max(_above(idle[1], "thread", 5_000_000), _above(burst[0], "thread", 5_000_000))
    assert 0.6 * bursts <= late <= bursts + host_stalls + 5, (late, host_stalls)
    assert burst[1]["thread"]["max_ns"] >= 5_000_000
    # The interrupt is not held back. Held to CPU 0 of the same run, which shares the host's stalls but
    # not the load: a held-back interrupt would leave CPU 1 about one late interrupt per burst more, as
    # the thread has below; here it has fewer than half that. (Not held to the idle run: the host's
    # load moves between the two measurements; beside stress-ng --cpu 2, 1 and 4 late ones on CPU 1
    # against 7 and 6 on CPU 0, and once 17 on CPU 1 against 9 in the idle run.)
    late_irq = _above(burst[1], "irq", 5_000_000) - _above(burst[0], "irq", 5_000_000)
    assert late_irq < 0.5 * bursts, (burst[1]["irq"], burst[0]["irq"])
    # CPU 0 shares the host's stalls but not the load: CPU 1 has about a late activation per burst more.
    # (Not a ratio: a host that stalls this VM for over 5 ms 40 times in 2 s, seen once, gives CPU 0 as
    # many late activations as the bursts give CPU 1; a stall inside a burst adds none to CPU 1.) The
    # difference is decided only while the stalls are fewer than half the bursts: beyond that they are
    # as many as the difference looked for and vary by as much between the vCPUs, so no verdict can be
    # drawn from it, as the report's conditions would say of such a run (beside stress-ng --cpu 2, 36
    # and 39 late ones on CPU 0 against 50 and 56 on CPU 1; the bounds above still hold then).
    stalls = _above(burst[0], "thread", 5_000_000)
    if stalls < 0.5 * bursts:
        assert late - stalls >= 0.5 * bursts, (late, stalls)
    # The periods a burst swallowed are missing: about a fifth of CPU 1's activations. Held to CPU 0 of the
    # same run, which the host's load slows alike (0.82 to 0.84 seen; without the load the CPUs agree
    # within 1 %), not to the idle run's count: the emulated guest loses 2 to 13 % of its periods to the
    # host, differently from one measurement to the next.
    assert burst[1]["irq"]["count"] <= 0.92 * burst[0]["irq"]["count"], (burst[1]["irq"]["count"], burst[0]["irq"]["count"])


def test_osnoise_counts_the_real_time_bursts_as_noise_on_their_cpu(rt_run):
    """Ground truth: the same load takes 20 % of CPU 1 (10 ms of every 50 ms) from osnoise's thread, and
    nothing of CPU 0's. The emulated guest's own noise (its vCPUs waiting for the host: 9 % here when the
    host is quiet, 57 % seen with the host busy) already hides part of each burst, so the rise expected is
    20 % of what the guest's CPU had left."""
    run, _, _ = rt_run
    idle, burst = _results(run, "osnoise"), _results(run, "osnoise", "rt_burst")
    share = {cpu: 100 - r["available_percent"] for cpu, r in burst.items()}
    base = {cpu: 100 - r["available_percent"] for cpu, r in idle.items()}
    # With the host busy, the guest's own noise (over half of each vCPU twice beside stress-ng --cpu 2)
    # varies by more between its CPUs and measurements (46 to 60 %) than a fifth of what is left: no
    # verdict can be drawn from it, as the report's conditions would say of such a run.
    if max(*base.values(), share[0]) > 40:
        pytest.skip(f"the guest's own noise ({base[0]:.0f} / {base[1]:.0f} % idle) hides the bursts")
    left = 100 - base[1]
    rise = {cpu: share[cpu] - base[cpu] for cpu in (0, 1)}
    # The host's own load moves both vCPUs' noise between the two measurements alike, so CPU 1's rise
    # alone says as much of the host as of the bursts (CPU 0's noise once fell from 28.8 to 16.4 %
    # between them, leaving CPU 1 a rise of 3 points under its bursts): the burst is what CPU 1
    # gained beyond CPU 0.
    assert 0.5 * 0.2 * left <= rise[1] - rise[0] <= 27, (share, base)
    assert burst[1]["max_single_noise_ns"] >= 5_000_000


def test_osnoise_counts_each_real_time_wake_up_as_a_thread_event_on_its_cpu(rt_run):
    """Ground truth: every wake-up of a SCHED_FIFO 99 timer load on CPU 1 preempts osnoise's thread there,
    one thread event each. The load counts its own wake-ups (fewer than 500/s when the emulated CPU falls
    behind: the deadlines it overslept are skipped), so the events osnoise counts on CPU 1 are those
    wake-ups plus the guest's own thread noise (30 to 70 per second seen without the load), and CPU 0's
    stay well below the wake-ups: a count on the wrong CPU, or on both, puts all of them there. CPU 0's
    bound is half the wake-ups, not the idle run's background, because that background grows with the
    host's load (161 events against 523 wake-ups beside stress-ng, 0.31 of them, where the idle run
    had far fewer). The wake-up rate is set well above the background so that a count on the wrong
    CPU, or of the wrong kind of event, cannot pass."""
    run, _, _ = rt_run
    idle, ticks = _results(run, "osnoise"), _results(run, "osnoise", "rt_ticks")
    (m,) = [m for m in run.measurements if m.benchmark == "osnoise" and m.load == "rt_ticks"]
    achieved = [r for r in m.load_records["rt_ticks"] if r["type"] == "result"][-1]["achieved_ops_per_s"]
    wake_ups = achieved * ticks[1]["runtime_ns"] / 1e9
    background = idle[1]["thread_events"] * ticks[1]["count"] / idle[1]["count"]
    assert 0.8 * wake_ups <= ticks[1]["thread_events"] <= 1.2 * wake_ups + 3 * background + 50, \
        (ticks[1]["thread_events"], wake_ups, background)
    assert ticks[0]["thread_events"] < 0.5 * wake_ups, (ticks[0]["thread_events"], wake_ups)


def test_hwlat_reports_its_detections_and_settings_in_every_format(rt_run):
    """The guest's kernel is rtvbench's own: hwlat runs in the probe's instance where the kernel allows it,
    else in the top-level one; either way with the window, width and threshold asked, one CPU at a time."""
    run, doc, tmp = rt_run
    results = _results(run, "hwlat")
    assert set(results) == {0, 1, "all"}
    merged = results["all"]
    assert (merged["window_us"], merged["width_us"], merged["threshold_us"]) == (500000, 250000, 10)
    assert merged["instance"] in ("own", "top-level")
    assert merged["count"] == results[0]["count"] + results[1]["count"] == merged["gap"]["count"]
    assert sum(c for _, _, c in merged["gap"]["histogram"]["buckets"]) == merged["count"]
    if merged["count"]:
        # Each detection is a gap above the threshold, and no gap outlasts the run.
        assert 10_000 <= merged["gap"]["min_ns"] <= merged["gap"]["max_ns"] < 3e9, merged["gap"]
    (m,) = [m for m in doc["measurements"] if m["benchmark"] == "hwlat" and m["load"] == "idle"]
    summarized = {(s["benchmark"], s["figure"]) for s in doc["summaries"]}
    for figure in ("detections", "window_us", "width_us", "cpu1.detections"):
        assert ("hwlat", figure) in summarized, figure
    if merged["count"]:
        assert ("hwlat", "hwlat_max_us") in summarized
    r = run_cli("report", "--format", "csv", "-o", "-", "--store", "sqlite:///s.db", cwd=tmp, env=cli_env())
    assert r.returncode == 0, r.stderr
    rows = {(row["benchmark"], row["load"], row["figure"]): row["value"] for row in csv.DictReader(io.StringIO(r.stdout))}
    assert float(rows[("hwlat", "idle", "detections")]) == merged["count"]
    assert float(rows[("hwlat", "idle", "width_us")]) == 250000
    r = run_cli("report", "--format", "md", "-o", "-", "--store", "sqlite:///s.db", cwd=tmp, env=cli_env())
    assert r.returncode == 0, r.stderr
    assert "hardware latency detections" in r.stdout and "hwlat width" in r.stdout


STALL_S = 1.0
STALLS = 3


@pytest.fixture(scope="module")
def rt_guest(probe, tmp_path_factory):
    tmp = _rt_kernel_dir(tmp_path_factory, "hwlat")
    c = parse_campaign(f'name = "h"\n[environments.g]\ntarget = "qemu"\narch = "x86_64"\ncpus = 2\n'
                       f'kernel = "{RT_KERNEL}"\n[benchmarks.b]\nkind = "os"\n', "h.toml", tmp)
    target = c.environments["g"]
    target.deploy_probe()
    yield target
    target.close()


def test_a_guest_stopped_on_the_host_shows_each_stop_as_a_hardware_gap(rt_guest):
    """Ground truth: the guest's QEMU process stopped (SIGSTOP) for 1 s three times while hwlat spins for
    900 ms of every second. The guest's clock runs on through a stop (under TCG its TSC is the host's), so
    a stop that falls in a window's spin is a gap of at least its length; one that falls in the 100 ms of
    sleep between spins is not seen. So at least one detection of 1 s or more (all three missed: about one
    run in a thousand), and never more such detections than stops."""
    pid = rt_guest.host_usage()["guests"][0]["pid"]
    lines: list[str] = []

    def stop_the_guest():
        while not lines:
            time.sleep(0.05)
        time.sleep(1.0)
        for _ in range(STALLS):
            os.kill(pid, signal.SIGSTOP)
            time.sleep(STALL_S)
            os.kill(pid, signal.SIGCONT)
            time.sleep(1.5)

    stopper = threading.Thread(target=stop_the_guest, daemon=True)
    stopper.start()
    done = rt_guest.run(["/init", "kernel-tracer", "--tracer", "hwlat", "--duration-s", "10", "--window-us", "1000000",
                         "--width-us", "900000", "--top-level"], lines.append)
    stopper.join(timeout=30)
    assert done.returncode == 0, done.stderr
    recs = records("\n".join(lines))
    (merged,) = [r for r in of_type(recs, "result") if r["cpu"] == "all"]
    long_gaps = sum(c for lo, _, c in merged["gap"]["histogram"]["buckets"] if lo >= STALL_S * 0.98e9)
    assert 1 <= long_gaps <= STALLS, merged["gap"]
    assert merged["gap"]["max_ns"] >= STALL_S * 1e9 * 0.99, merged["gap"]


def test_a_second_hwlat_is_refused_while_one_runs_and_the_first_is_left_alone(rt_guest):
    """The kernel runs one hwlat at a time: a second probe is told so in one sentence (exit 3), not that
    the tracer needs the top-level instance, and never takes that over from the first, which ends with
    its results."""
    first: list[str] = []
    bg = rt_guest.start_background(["/init", "kernel-tracer", "--tracer", "hwlat", "--duration-s", "6",
                                    "--top-level"], first.append)
    deadline = time.monotonic() + 60
    while not first and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)
    second: list[str] = []
    done = rt_guest.run(["/init", "kernel-tracer", "--tracer", "hwlat", "--duration-s", "1", "--top-level"],
                        second.append)
    assert done.returncode == 3, done.stderr
    assert done.stderr.count("\n") <= 1 and "another program runs it already" in done.stderr, done.stderr
    end = records("\n".join(second))[-1]
    assert end["type"] == "end" and end["status"] == "error" and "busy" in end["error"].lower(), end
    while bg.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert bg.poll() == 0, bg.failure()
    recs = records("\n".join(first))
    (merged,) = [r for r in of_type(recs, "result") if r["cpu"] == "all"]
    assert merged["instance"] == "own" and recs[-1]["status"] == "ok", recs[-1]


def test_hwlat_puts_back_the_kernels_settings(rt_guest):
    """The window, width, threshold and mode are the kernel's, not the run's: after a run with others
    they read as before it."""
    files = ("hwlat_detector/window", "hwlat_detector/width", "hwlat_detector/mode", "tracing_thresh",
             "current_tracer", "tracing_cpumask")
    before = {f: rt_guest.read_file(f"/sys/kernel/tracing/{f}") for f in files}
    done = rt_guest.run(["/init", "kernel-tracer", "--tracer", "hwlat", "--duration-s", "1", "--window-us", "200000",
                         "--width-us", "20000", "--threshold-us", "50", "--cpus", "1", "--top-level"], lambda line: None)
    assert done.returncode == 0, done.stderr
    assert {f: rt_guest.read_file(f"/sys/kernel/tracing/{f}") for f in files} == before
