"""End-to-end tests of `rtvb-probe noise` against ground truth and against oslat.

Ground truth: a SCHED_FIFO priority 90 process pinned to the measured CPU that spins 3 ms every
50 ms (tests/helpers/rt_hog.py), above the probe's priority 80, so each of its bursts is one gap
of 3 ms and it takes 6 % of the CPU. Runs with and without it alternate, so that a shared, busy
machine changes both alike.

Runs last 0.9 s: a CPU kept busy at a real-time policy for longer than the throttling runtime
(950 ms of every second here) is handed to waiting ordinary tasks for 50 ms, which the probe rightly
counts as noise but which would hide the hog's 3 ms in the maximum. A pause between runs lets those
tasks catch up, so the next run starts without a debt.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from host_helpers import HELPERS
from probe_records import of_type, records
from rtvbench.kinds.noise.params import DEFAULT_PRIORITY, DEFAULT_THRESHOLD_US

MS = 1_000_000
US = 1_000
RUN_S = 0.9
PAUSE_S = 0.4
BURST_MS, PERIOD_MS = 3, 50
#: the CPU the hog and the probe share: not CPU 0, where most of the machine's own work lands
CPU = 1 if (os.cpu_count() or 1) > 1 else 0
PERCENTILES = ("p50_ns", "p90_ns", "p99_ns", "p999_ns", "p9999_ns", "p99999_ns", "p999999_ns")

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="a SCHED_FIFO hog needs root")


def run_noise(probe: Path, *args: str) -> list[dict]:
    proc = subprocess.run([str(probe), "noise", *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return records(proc.stdout)


def merged(recs: list[dict]) -> dict:
    (res,) = [r for r in of_type(recs, "result") if r["cpu"] == "all"]
    return res


def gaps_at_least(res: dict, ns: int) -> int:
    return sum(c for lo, _, c in res["histogram"]["buckets"] if lo >= ns)


class Hog:
    """The rt_hog helper on CPU, started and stopped around a run; its bursts as CLOCK_REALTIME spans."""

    def __init__(self, cpu: int = CPU) -> None:
        self.proc = subprocess.Popen([sys.executable, str(HELPERS / "rt_hog.py"), str(cpu), "90", str(BURST_MS),
                                      str(PERIOD_MS)], stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "ready"
        self.bursts: list[tuple[int, int]] = []

    def stop(self) -> list[tuple[int, int]]:
        self.proc.terminate()
        out, _ = self.proc.communicate(timeout=10)
        self.bursts = [tuple(b) for b in json.loads(out.strip().splitlines()[-1])["bursts"]]
        return self.bursts

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def bursts_inside(bursts: list[tuple[int, int]], recs: list[dict]) -> int:
    """Bursts that began and ended while the probe measured (between its meta and its end)."""
    start = recs[0]["start_realtime_ns"]
    end = start + recs[-1]["elapsed_ns"]
    return sum(1 for b0, b1 in bursts if start <= b0 and b1 <= end)


def in_band(res: dict, lo_ns: int, hi_ns: int) -> list[list[int]]:
    """The histogram buckets that lie within [lo_ns, hi_ns)."""
    return [b for b in res["histogram"]["buckets"] if lo_ns <= b[0] and b[1] <= hi_ns]


#: the gaps one burst of the hog makes: its 3 ms and the two context switches around it
HOG_BAND = (2900 * US, 3600 * US)


@needs_root
def test_a_known_hog_is_measured_and_absent_without_it(probe):
    """Two rounds of (hog, no hog). With the hog: the longest gap is at least one burst, and below three
    in at least one of the rounds; every burst of the run is one gap of the hog's length and an
    interruption; the noise is the hog's
    6 % on top of what the machine takes anyway (4-12 %), and the gaps of the hog's length alone make
    4.5-7.5 % of the run. Without it, the run has almost no gap of that length, and the hog's run has
    at least 3 points more noise.

    The machine is shared: other tests start real-time loads on the same CPU (bursts of 5 ms were
    seen during these runs, with and without the hog), so the checks count the hog's band of gap
    lengths rather than all long gaps, and allow for a burst that such a load lengthened.
    Measured on the shared 2-vCPU VM: max 3.05-5.09 ms, 18 bursts in 0.9 s and all seen, gaps of the
    hog's length 6.07-6.10 % of the run, noise 6.9-9.4 % with the hog, 0.8-3.8 % without."""
    maxima = []
    for _ in range(2):
        time.sleep(PAUSE_S)
        with Hog() as hog:
            time.sleep(0.1)                     # its first period starts 50 ms after "ready"
            recs = run_noise(probe, "--duration-s", str(RUN_S), "--cpus", str(CPU))
            bursts = bursts_inside(hog.stop(), recs)
        with_hog = merged(recs)
        time.sleep(PAUSE_S)
        without = merged(run_noise(probe, "--duration-s", str(RUN_S), "--cpus", str(CPU)))

        band = in_band(with_hog, *HOG_BAND)
        hog_gaps = sum(c for _, _, c in band)
        hog_share = sum((lo - with_hog["min_ns"]) * c for lo, _, c in band) / with_hog["span_ns"] * 100
        band_without = sum(c for _, _, c in in_band(without, *HOG_BAND))
        print(f"hog: {bursts} bursts, max {with_hog['max_ns'] / US:.0f} us, {hog_gaps} gaps of its length "
              f"({hog_share:.2f} % of the run), {with_hog['events']} events, noise "
              f"{with_hog['noise_percent']:.2f} %; without: {band_without} such gaps, max "
              f"{without['max_ns'] / US:.0f} us, noise {without['noise_percent']:.2f} %")

        assert recs[0]["privileges"]["rt_granted"] is True
        assert 15 <= bursts <= 19, bursts
        assert BURST_MS * MS - 20 * US <= with_hog["max_ns"], with_hog["max_ns"]
        maxima.append(with_hog["max_ns"])
        assert bursts - 2 <= hog_gaps <= bursts + 2 + band_without, (hog_gaps, bursts, band_without)
        assert with_hog["events"] >= bursts - 2, (with_hog["events"], bursts)
        # The total holds the hog's share and the machine's own noise, which is measured right after
        # (on a shared VM it moves between runs by several points: 6 to 10 % seen in one minute).
        assert hog_share <= with_hog["noise_percent"] <= hog_share + without["noise_percent"] + 5, \
            (with_hog["noise_percent"], hog_share, without["noise_percent"])
        assert 4.5 <= hog_share <= 7.5, hog_share
        # noise per second is the same quantity in ns per s of run
        assert with_hog["noise_per_s_ns"] == pytest.approx(with_hog["noise_percent"] * 1e7, rel=1e-6)

        assert band_without <= 3, in_band(without, *HOG_BAND)
        assert with_hog["noise_percent"] - without["noise_percent"] >= 3, \
            (with_hog["noise_percent"], without["noise_percent"])
    # A foreign interruption may outlast a burst in one run (9.4 ms was seen without the hog), not in both.
    assert min(maxima) < 3 * BURST_MS * MS, maxima


OSLAT_TRIGGER = re.compile(r"triggered on cpu \d+ with (\d+) us")


@needs_root
@pytest.mark.skipif(shutil.which("oslat") is None, reason="rt-tests is installed by make setup")
def test_agrees_with_oslat_on_the_hog(probe):
    """oslat and the probe alternately against the same hog, both at SCHED_FIFO 80 on its CPU: their
    maxima over a stretch that holds one or two bursts agree.

    oslat cannot run for less than a second, long enough for the throttling gap of 50 ms to be its
    maximum, so it is told to stop at its first gap above 2 ms (`-T 2000`), a hog burst: its maximum is
    that burst's gap, which it prints. The probe measures 0.1 s, two bursts. Over 18 bursts the probe's
    maximum would be the unluckiest burst (one that a hypervisor's or another task's interruption
    lengthened: 5 ms at times on the shared CI VM), which a single burst of oslat's rarely is; so each
    tool sees about as many bursts. The medians over 5 rounds must agree within 10 % of oslat's (oslat
    counts whole microseconds; bursts differ by tens of microseconds).
    Measured: oslat 3029-3048 us, probe 3054-3112 us (the probe about 1 % higher: the larger of two bursts)."""
    ours, theirs = [], []
    with Hog() as hog:
        for _ in range(5):
            time.sleep(PAUSE_S)
            o = subprocess.run(["oslat", "--cpu-list", str(CPU), "--duration", "5", "--rtprio", "80", "-q",
                                "-T", "2000"], capture_output=True, text=True, timeout=30)
            m = OSLAT_TRIGGER.search(o.stdout + o.stderr)
            assert m, o.stdout + o.stderr
            theirs.append(int(m.group(1)))
            time.sleep(PAUSE_S)
            res = merged(run_noise(probe, "--duration-s", "0.1", "--cpus", str(CPU), "--priority", "80"))
            ours.append(res["max_ns"] / US)
        hog.stop()
    o_med, p_med = statistics.median(theirs), statistics.median(ours)
    print(f"oslat maxima {theirs} us, probe maxima {[round(x) for x in ours]} us")
    assert BURST_MS * 1000 <= o_med < 2 * BURST_MS * 1000, theirs
    assert abs(p_med - o_med) <= 0.1 * o_med, f"probe maxima {ours} us, oslat {theirs} us"


def test_record_stream_shape_and_defaults(probe):
    """Defaults agree with the campaign's; per-CPU and merged results add up; the noise is the gaps above
    the threshold less the loop's own cost; the histogram holds every gap."""
    recs = run_noise(probe, "--duration-s", "0.15")
    assert [r["type"] for r in recs][0] == "meta" and recs[-1]["type"] == "end" and recs[-1]["status"] == "ok"
    params = recs[0]["params"]
    assert params["priority"] == DEFAULT_PRIORITY and params["threshold_ns"] == DEFAULT_THRESHOLD_US * 1000
    assert params["policy"] == "fifo" and params["duration_ns"] == 150 * MS
    per_cpu = [r for r in of_type(recs, "result") if r["cpu"] != "all"]
    assert sorted(r["cpu"] for r in per_cpu) == sorted(params["cpus"])
    for r in per_cpu:
        buckets = r["histogram"]["buckets"]
        assert sum(b[2] for b in buckets) == r["count"] > 1000
        assert buckets[0][0] <= r["min_ns"] < buckets[0][1] and buckets[-1][0] <= r["max_ns"] < buckets[-1][1]
        ps = [r[k] for k in PERCENTILES]
        assert r["min_ns"] <= ps[0] and ps == sorted(ps) and ps[-1] <= r["max_ns"]
        # events: gaps > 1000 ns; bucket [1000, 1004) holds 1000 itself, which is not above
        assert gaps_at_least(r, 1004) <= r["events"] <= gaps_at_least(r, 1000)
        assert 0.1 * 1e9 < r["span_ns"] <= 0.15 * 1e9
        assert 0 <= r["noise_ns"] <= r["span_ns"]
        assert r["noise_percent"] == pytest.approx(100 * r["noise_ns"] / r["span_ns"], rel=1e-6)
        assert 0 <= r["max_offset_ns"] <= r["span_ns"]
        # the gaps cover the run: their sum is the span
        assert r["avg_ns"] * r["count"] == pytest.approx(r["span_ns"], rel=1e-6)
    res = merged(recs)
    assert res["count"] == sum(r["count"] for r in per_cpu) and res["events"] == sum(r["events"] for r in per_cpu)
    assert res["noise_ns"] == sum(r["noise_ns"] for r in per_cpu)
    worst = max(per_cpu, key=lambda r: r["max_ns"])
    assert (res["max_ns"], res["max_cpu"], res["max_offset_ns"]) == (worst["max_ns"], worst["cpu"],
                                                                    worst["max_offset_ns"])
    assert res["min_ns"] == min(r["min_ns"] for r in per_cpu)


@pytest.mark.functional
def test_threshold_sets_what_counts_as_an_interruption(probe):
    recs = run_noise(probe, "--duration-s", "0.1", "--cpus", "0", "--policy", "other", "--threshold-us", "0.001")
    res = merged(recs)
    assert recs[0]["params"]["threshold_ns"] == 1 and recs[0]["privileges"]["rt_granted"] is False
    # every gap is above 1 ns: every gap is an event, and the noise is all time beyond the floor
    assert res["events"] == res["count"]
    assert res["noise_ns"] == pytest.approx(res["span_ns"] - res["count"] * res["min_ns"], abs=1)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_ends_a_run_on_every_cpu_at_once_with_results(probe, sig):
    """Every CPU is kept busy at SCHED_FIFO 80, so an ordinary-priority main thread would see the signal
    only when throttling lets it run; the probe's ends within a fraction of a second with the gaps so far.
    The run would otherwise last 5 s."""
    proc = subprocess.Popen([str(probe), "noise", "--duration-s", "5"], stdout=subprocess.PIPE, text=True)
    first = proc.stdout.readline()
    time.sleep(0.3)
    asked = time.monotonic()
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=30)
    took = time.monotonic() - asked
    assert proc.returncode == 0
    recs = records(first + out)
    assert recs[-1]["type"] == "end" and recs[-1]["status"] == "interrupted"
    print(f"{signal.Signals(sig).name}: ended {took * 1000:.0f} ms after the signal")
    assert took < 1.0, took
    res = merged(recs)
    assert res["count"] > 1000 and sum(b[2] for b in res["histogram"]["buckets"]) == res["count"]
    for r in of_type(recs, "result"):
        if r["cpu"] != "all":
            assert 0.2e9 < r["span_ns"] < 4.5e9, r["span_ns"]


@pytest.mark.parametrize("args,fragment", [
    (["--duration-s", "0"], "--duration-s must be a number of seconds from 0.001 to 1e7, got '0'."),
    (["--duration-s", "1e8"], "--duration-s must be"),
    (["--threshold-us", "0"], "--threshold-us must be a number of microseconds"),
    (["--threshold-us", "abc"], "--threshold-us must be"),
    (["--priority", "100"], "--priority"),
    (["--policy", "idle"], "--policy"),
    (["--policy", "other", "--priority", "5"], "--policy other takes no real-time priority"),
    (["--policy", "fifo", "--priority", "0"], "--policy fifo and rr need --priority from 1 to 99."),
    (["--cpus", "1-0"], "--cpus"),
    (["--bogus", "1"], "unknown or incomplete option '--bogus'"),
    (["extra"], "unexpected argument 'extra'"),
])
@pytest.mark.functional
def test_bad_options_exit_2_with_one_sentence(probe, args, fragment):
    proc = subprocess.run([str(probe), "noise", *args], capture_output=True, text=True, timeout=10)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("rtvb-probe noise: ") and lines[0].endswith("."), proc.stderr
    assert fragment in lines[0], lines[0]


@pytest.mark.functional
def test_check_args_and_describe_options(probe):
    ok = subprocess.run([str(probe), "--check-args", "noise", "--duration-s", "1e7", "--cpus", "1023",
                         "--threshold-us", "3.6e9", "--priority", "99"], capture_output=True, text=True, timeout=10)
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "", "")
    bad = subprocess.run([str(probe), "--check-args", "noise", "--priority", "100"], capture_output=True,
                         text=True, timeout=10)
    assert bad.returncode == 2 and "--priority" in bad.stderr
    desc = subprocess.run([str(probe), "--describe-options", "noise"], capture_output=True, text=True, timeout=10)
    assert desc.returncode == 0
    options = {r["option"]: r for r in records(desc.stdout)}
    assert set(options) == {"duration-s", "cpus", "priority", "policy", "threshold-us"}
    assert (options["duration-s"]["min"], options["duration-s"]["max"]) == (0.001, 1e7)
    assert options["policy"]["names"] == ["fifo", "rr", "other"]
    helped = subprocess.run([str(probe), "noise", "--help"], capture_output=True, text=True, timeout=10)
    assert helped.returncode == 0 and "--threshold-us" in helped.stdout
    listed = subprocess.run([str(probe), "--help"], capture_output=True, text=True, timeout=10)
    assert re.search(r"^\s+noise\s", listed.stdout, re.M)
