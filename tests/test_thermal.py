"""Thermal, frequency and throttling state sampled beside each measurement (`rtvb-probe sample`,
rtvbench.runner.thermal_sampler, rtvbench/run_analyses/thermal, the report's table).

- the flagging logic on synthetic series;
- the probe's sampler on a fake sysfs tree (its hidden --root), and on this machine;
- the sampler that serves a local environment for a whole run (`sample --requests`,
  StandingSampler): samples only when asked and between a measurement's two requests, one process
  for every measurement, a new one after it failed;
- end to end: a local campaign whose sampler reads a fake tree (RTVBENCH_SYSFS_ROOT) that the test
  changes while the measurement runs: the stored series shows the change, the report flags it.
"""

from __future__ import annotations

import ctypes
import glob
import json
import os
import struct
import subprocess
import threading
from pathlib import Path

import pytest

from host_helpers import cli_env, run_cli, run_report, wait_for, waiting_benchmark, work_campaign
from probe_records import of_type, records
from rtvbench.errors import TargetError
from rtvbench.records import ThermalSample
from rtvbench.run_analyses.thermal.analysis import thermal_state
from rtvbench.run_analyses.thermal.section import NO_DATA
from rtvbench.runner.thermal_sampler import Samplers, StandingSampler, ThermalSampler
from rtvbench.targets.base import FedBackground
from rtvbench.targets.capabilities import FeedsBackground

pytestmark = pytest.mark.functional


def sample(seq: int, freq=None, throttle=None, temp=None, cooling=None, zones=None, devices=None) -> ThermalSample:
    """A sample as the probe prints it, decoded as the store's reader does."""
    s = {"type": "sample", "seq": seq, "t_ns": seq * 500_000_000, "temp_mC": temp or {}, "freq_khz": freq or {},
         "throttle": throttle or {}, "cooling": cooling or {}}
    if seq == 0:
        s["zones"], s["cooling_devices"] = zones or {}, devices or {}
    return ThermalSample.of(s)


# -- the flagging logic ------------------------------------------------------

def test_a_rising_throttle_count_is_flagged():
    st = thermal_state([sample(i, freq={"cpu0": 2_000_000}, throttle={"cpu0.core_throttle_count": c})
                        for i, c in enumerate([5, 5, 6, 6])])
    assert st.flagged and st.flags == ["throttled: cpu0.core_throttle_count rose by 1"]


def test_a_stable_frequency_is_not_flagged():
    st = thermal_state([sample(i, freq={"cpu0": f, "cpu1": 1_500_000}, throttle={"cpu0.core_throttle_count": 7},
                               temp={"thermal_zone0": 50_000 + i})
                        for i, f in enumerate([2_000_000, 1_960_000, 2_000_000])])   # 2 %: within 5 %
    assert not st.flagged and st.has_data
    assert (st.freq_min_khz, st.freq_max_khz, st.temp_max_mC) == (1_500_000, 2_000_000, 50_002)


def test_a_frequency_drop_of_20_percent_is_flagged():
    st = thermal_state([sample(i, freq={"cpu0": 2_000_000, "cpu1": f})
                        for i, f in enumerate([2_000_000, 2_000_000, 1_600_000, 1_600_000])])
    assert st.flags == ["frequency of cpu1 changed by 20 % (1600 to 2000 MHz)"]


def test_trip_points_and_cooling_devices():
    zones = {"thermal_zone0": {"type": "cpu", "trips": [{"type": "active", "temp_mC": 60_000},
                                                         {"type": "passive", "temp_mC": 80_000}]}}
    devices = {"cooling_device0": {"type": "Fan", "max_state": 3},
               "cooling_device1": {"type": "cpufreq-cpu0", "max_state": 10}}
    calm = thermal_state([sample(0, temp={"thermal_zone0": 70_000}, zones=zones, devices=devices,
                                 cooling={"cooling_device0": 0, "cooling_device1": 0}),
                          sample(1, temp={"thermal_zone0": 79_000}, cooling={"cooling_device0": 2,
                                                                             "cooling_device1": 0})])
    assert not calm.flagged         # above the active (fan) trip point, a fan spinning up: no throttling
    hot = thermal_state([sample(0, temp={"thermal_zone0": 70_000}, zones=zones, devices=devices,
                                cooling={"cooling_device1": 0}),
                         sample(1, temp={"thermal_zone0": 81_000}, cooling={"cooling_device1": 2})])
    assert hot.flags == ["thermal_zone0 (cpu) reached 81.0 °C, at or above its passive trip point 80.0 °C",
                         "cooling device cooling_device1 (cpufreq-cpu0) went from state 0 to 2"]


def test_no_files_no_data_no_flag():
    st = thermal_state([sample(0), sample(1)])
    assert not st.has_data and not st.flagged and st.freq_min_khz is None


# -- the probe's sampler ------------------------------------------------------

def fake_sysfs(root: Path) -> dict[str, Path]:
    zone = root / "sys/class/thermal/thermal_zone0"
    zone.mkdir(parents=True)
    (zone / "type").write_text("x86_pkg_temp\n")
    (zone / "temp").write_text("45000\n")
    (zone / "trip_point_0_temp").write_text("90000\n")
    (zone / "trip_point_0_type").write_text("passive\n")
    files = {"temp": zone / "temp"}
    for cpu in (0, 1):
        d = root / f"sys/devices/system/cpu/cpu{cpu}"
        (d / "cpufreq").mkdir(parents=True)
        (d / "cpufreq/scaling_cur_freq").write_text("2000000\n")
        (d / "thermal_throttle").mkdir()
        (d / "thermal_throttle/core_throttle_count").write_text("3\n")
        (d / "thermal_throttle/core_throttle_max_time_ms").write_text("0\n")   # not a counter
        files[f"freq{cpu}"] = d / "cpufreq/scaling_cur_freq"
        files[f"throttle{cpu}"] = d / "thermal_throttle/core_throttle_count"
    return files


def test_sampler_reads_a_fake_tree(probe, tmp_path):
    fake_sysfs(tmp_path)
    p = subprocess.run([str(probe), "sample", "--root", str(tmp_path), "--count", "2", "--interval-ms", "10"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    recs = records(p.stdout)
    first, second = of_type(recs, "sample")
    assert first["zones"] == {"thermal_zone0": {"type": "x86_pkg_temp",
                                                "trips": [{"type": "passive", "temp_mC": 90000}]}}
    assert first["temp_mC"] == {"thermal_zone0": 45000}
    assert first["freq_khz"] == {"cpu0": 2000000, "cpu1": 2000000}
    assert first["throttle"] == {"cpu0.core_throttle_count": 3, "cpu1.core_throttle_count": 3}
    assert "zones" not in second and second["seq"] == 1 and second["t_ns"] >= first["t_ns"] + 10_000_000
    assert of_type(recs, "end")[0]["status"] == "ok"


def test_what_this_machine_has(probe):
    """Whatever this machine exposes is sampled, and nothing missing is an error."""
    p = subprocess.run([str(probe), "sample", "--count", "1"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    (s,) = of_type(records(p.stdout), "sample")
    zones = glob.glob("/sys/class/thermal/thermal_zone*/temp")
    freqs = glob.glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_cur_freq")
    counters = glob.glob("/sys/devices/system/cpu/cpu[0-9]*/thermal_throttle/*_throttle_count")
    assert len(s["temp_mC"]) <= len(zones) and len(s["throttle"]) == len(counters)
    assert len(s["freq_khz"]) >= len(freqs) or not freqs
    print(f"this machine: {len(s['temp_mC'])} thermal zone(s), {len(s['freq_khz'])} CPU frequency file(s), "
          f"{len(s['throttle'])} throttle counter(s), {len(s['cooling'])} cooling device(s): {s}")


def test_requests_sample_only_between_begin_and_end(probe, tmp_path):
    """`sample --requests` answers each request at once, samples at its pace only inside a window,
    restarts seq and t_ns at each "begin", ignores other lines and ends at the end of its stdin."""
    fake_sysfs(tmp_path)
    p = subprocess.Popen([str(probe), "sample", "--requests", "--interval-ms", "10", "--root", str(tmp_path)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    try:
        def ask(line: str) -> None:
            p.stdin.write(line + "\n")
            p.stdin.flush()

        def next_record() -> dict:
            return json.loads(p.stdout.readline())
        assert next_record()["type"] == "meta"
        ask("begin")
        window = [next_record()]
        while len(window) < 3:              # two of the pace's, however long they take
            window.append(next_record())
        ask("end")
        while window[-1].get("request") != "end":
            window.append(next_record())
        ask("no such request")              # no answer: the next line is the begin's
        threading.Event().wait(0.2)         # 20 of the pace's intervals: none may come outside a window
        ask("begin")
        again = next_record()
        ask("end")
        last = next_record()
        p.stdin.close()
        rest = [json.loads(line) for line in p.stdout]
        assert p.wait(60) == 0
    finally:
        p.kill()
        p.wait()
    assert [s["seq"] for s in window] == list(range(len(window)))
    assert [s.get("request") for s in window] == ["begin"] + [None] * (len(window) - 2) + ["end"]
    assert "zones" in window[0] and all("zones" not in s for s in window[1:])
    assert [s["t_ns"] for s in window] == sorted(s["t_ns"] for s in window)
    assert (again["seq"], again["request"], last["seq"], last["request"]) == (0, "begin", 1, "end")
    assert again["zones"] == window[0]["zones"] and again["t_ns"] < window[1]["t_ns"]
    assert [r["type"] for r in rest] == ["end"] and rest[0]["status"] == "ok"


class _FakeSampler(FedBackground):
    """A standing sampler on a target of the test's: answers each request, but dies at its
    `dies_at_end`th "end" instead of answering it."""

    def __init__(self, on_line, dies_at_end: int | None) -> None:
        self.on_line, self.dies_at_end, self.ended, self.ends = on_line, dies_at_end, dies_at_end == 0, 0
        self.argv = ["sample"]
        on_line(json.dumps({"type": "meta", "schema": 1, "subcommand": "sample"}))

    def send(self, line: str) -> None:
        if self.ended:
            raise TargetError("it ended")
        self.ends += line == "end"
        if self.ends == self.dies_at_end:
            self.ended = True
            self.on_line(json.dumps({"type": "end", "status": "error", "error": "gone"}))
            return
        self.on_line(json.dumps({"type": "sample", "seq": 0 if line == "begin" else 1, "t_ns": 0,
                                 "request": line, "temp_mC": {}, "freq_khz": {}, "throttle": {}, "cooling": {}}))

    def poll(self):
        return 1 if self.ended else None

    def stop(self) -> None:
        self.ended = True

    def output_tail(self) -> str:
        return ""


class _FeedingTarget(FeedsBackground):
    def __init__(self, dies_at_end: list[int | None]) -> None:
        self.dies_at_end, self.started = dies_at_end, []

    def start_fed_background(self, argv, on_line):
        self.started.append(_FakeSampler(on_line, self.dies_at_end[len(self.started)]))
        return self.started[-1]


@pytest.mark.unit
def test_a_sampler_that_dies_leaves_that_measurement_without_data_and_is_replaced():
    target = _FeedingTarget([2, None])
    samplers = Samplers()
    sampler = samplers.for_measurement("board", target, "/probe")
    assert isinstance(sampler, StandingSampler)
    done = []
    for _ in range(4):
        assert samplers.for_measurement("board", target, "/probe") is sampler
        sampler.begin()
        done.append([s["request"] for s in sampler.end()])
        assert [s["request"] for s in sampler.end()] == done[-1]      # idempotent
    # The first sampler served two measurements, died at the second's end (no "after" sample, no
    # data); the third measurement started a new one.
    assert done == [["begin", "end"], [], ["begin", "end"], ["begin", "end"]]
    assert len(target.started) == 2 and sampler.stored() == {"interval_ms": 500, "samples": sampler.samples}
    samplers.close()
    assert target.started[-1].ended
    # A target that cannot feed a command's stdin gets a sampler of its own for each measurement.
    assert isinstance(Samplers().for_measurement("guest", object(), "/probe"), ThermalSampler)


@pytest.mark.unit
def test_a_probe_without_requests_gets_a_sampler_per_measurement():
    """An older probe ends at `--requests` (a usage error) without a sample: that measurement has no
    thermal data, and the ones after it get a sampler each, as on a target that cannot feed one."""
    target = _FeedingTarget([0])            # dies at once: "ended" before any request
    samplers = Samplers()
    standing = samplers.for_measurement("native", target, "/old-probe")
    standing.begin()
    assert standing.end() == [] and standing.stored() is None and standing.refused
    assert isinstance(samplers.for_measurement("native", target, "/old-probe"), ThermalSampler)


# -- end to end -----------------------------------------------------------------

class _Opens:
    """The files of some directories opened by anyone, counted per path (inotify IN_OPEN): which reads
    the sampler has made, without a clock."""

    IN_OPEN = 0x20

    def __init__(self, *dirs: Path) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        assert self.fd >= 0, os.strerror(ctypes.get_errno())
        self.dirs: dict[int, Path] = {}
        for d in dirs:
            wd = libc.inotify_add_watch(self.fd, os.fsencode(d), self.IN_OPEN)
            assert wd >= 0, os.strerror(ctypes.get_errno())
            self.dirs[wd] = d
        self.counts: dict[Path, int] = {}

    def drain(self) -> None:
        """Count every open that has happened until now (the kernel queues each as it happens)."""
        while True:
            try:
                buf = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return
            at = 0
            while at < len(buf):
                wd, _, _, size = struct.unpack_from("iIII", buf, at)
                if wd in self.dirs:          # not the queue's overflow (-1): it is drained far below that
                    path = self.dirs[wd] / buf[at + 16:at + 16 + size].rstrip(b"\0").decode()
                    self.counts[path] = self.counts.get(path, 0) + 1
                at += 16 + size

    def count(self, path: Path) -> int:
        self.drain()
        return self.counts.get(path, 0)

    def close(self) -> None:
        os.close(self.fd)


def test_a_throttle_during_a_measurement_is_stored_and_flagged(probe, tmp_path):
    root = tmp_path / "sysfs"
    files = fake_sysfs(root)
    freq, throttle = files["freq1"], files["throttle1"]
    # The measurement lasts until the test says: after the sampler has read the changed files.
    done = tmp_path / "done"
    (tmp_path / "c.toml").write_text('name = "thermal"\n[environments.native]\ntarget = "local"\n\n'
                                     + waiting_benchmark("hold", f"[ ! -e {done} ]"))
    opens = _Opens(freq.parent, throttle.parent)
    failed: list[BaseException] = []

    def opened(want: dict[Path, int]) -> bool:
        if done.exists():
            raise AssertionError("the measurement ended before the sampler read the files")
        return all(opens.count(path) >= n for path, n in want.items())

    def bump():
        try:
            # The sampler's first sample (the "before" one) has read both files: its start read the
            # frequency file once to find it, the sample once more.
            wait_for(lambda: opened({freq: 2, throttle: 1}), 120, "the sampler's first sample")
            # Then the CPU throttles, its frequency drops.
            for path, value in ((throttle, "4\n"), (freq, "1600000\n")):
                tmp = path.with_suffix(".new")
                tmp.write_text(value)
                os.replace(tmp, path)        # whole: the sampler never reads a half-written file
            # Every open counted from here on came after the change: a sample during the measurement
            # has read the new values (the last one, at its end, reads them again).
            after = {freq: opens.count(freq) + 1, throttle: opens.count(throttle) + 1}
            wait_for(lambda: opened(after), 120, "a sample of the changed files")
        except BaseException as e:       # said by the test, after the run
            failed.append(e)
        finally:
            done.touch()

    t = threading.Thread(target=bump, daemon=True)
    t.start()
    try:
        r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", "--export-json", "r.json", cwd=tmp_path,
                    env=cli_env(probe, RTVBENCH_SYSFS_ROOT=str(root)), timeout=300)
    finally:
        done.touch()
        t.join(10)
        opens.close()
    assert not failed, failed
    assert r.returncode == 0, r.stderr

    from sqlalchemy import create_engine, text
    with create_engine(f"sqlite:///{tmp_path / 's.db'}").connect() as conn:
        (data,) = conn.execute(text("select data from cpu_samples where phase = 'thermal'")).one()
    series = json.loads(data) if isinstance(data, str) else data
    samples = series["samples"]
    assert len(samples) >= 3 and [s["seq"] for s in samples] == list(range(len(samples)))
    counts = [s["throttle"]["cpu1.core_throttle_count"] for s in samples]
    assert counts[0] == 3 and counts[-1] == 4 and counts == sorted(counts)
    assert samples[0]["freq_khz"]["cpu1"] == 2000000 and samples[-1]["freq_khz"]["cpu1"] == 1600000
    assert all(s["throttle"]["cpu0.core_throttle_count"] == 3 for s in samples)

    html = run_report(r)
    table = html[html.index("Thermal, frequency and throttling state"):]
    table = table[:table.index("</table>")]
    assert "FLAGGED: throttled: cpu1.core_throttle_count rose by 1; frequency of cpu1 changed by 20 %" in table
    assert "1600 – 2000 MHz" in table and "45.0 °C" in table
    assert "ran throttled or at a changing frequency" in html
    [m] = json.loads((tmp_path / "r.json").read_text())["measurements"]
    assert m["thermal"]["flags"] == ["throttled: cpu1.core_throttle_count rose by 1",
                                     "frequency of cpu1 changed by 20 % (1600 to 2000 MHz)"]
    assert (m["thermal"]["freq_min_khz"], m["thermal"]["temp_max_mC"]) == (1600000, 45000)


def test_one_sampler_serves_every_measurement_of_a_local_run(probe, tmp_path):
    """Each measurement has its own samples, from a "begin" sample with the zones to an "end" one, all
    from one sampler process: it found the files once (one open of the frequency file at its start,
    then one per sample stored), where a sampler per measurement finds them again each time."""
    root = tmp_path / "sysfs"
    files = fake_sysfs(root)
    # Both CPUs' directories: the kernel merges an open into the one before it when that is the same
    # and still unread, and the sampler reads cpu0's and cpu1's file in turn.
    opens = _Opens(files["freq0"].parent, files["freq1"].parent)
    (tmp_path / "c.toml").write_text(work_campaign("thermal", 3))
    try:
        r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path,
                    env=cli_env(probe, RTVBENCH_SYSFS_ROOT=str(root)), timeout=300)
        assert r.returncode == 0, r.stderr
        opened = opens.count(files["freq0"])
    finally:
        opens.close()
    from sqlalchemy import create_engine, text
    with create_engine(f"sqlite:///{tmp_path / 's.db'}").connect() as conn:
        rows = conn.execute(text("select data from cpu_samples where phase = 'thermal' order by measurement_id")).all()
    series = [(json.loads(d) if isinstance(d, str) else d)["samples"] for (d,) in rows]
    assert len(series) == 3
    for samples in series:
        assert [s["seq"] for s in samples] == list(range(len(samples)))
        assert samples[0]["request"] == "begin" and samples[-1]["request"] == "end"
        assert samples[0]["zones"]["thermal_zone0"]["trips"] == [{"type": "passive", "temp_mC": 90000}]
    assert opened == 1 + sum(len(samples) for samples in series)


@pytest.mark.skipif(bool(glob.glob("/sys/class/thermal/thermal_zone*/temp")
                         + glob.glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_cur_freq")
                         + glob.glob("/sys/devices/system/cpu/cpu[0-9]*/thermal_throttle/*_throttle_count")
                         + glob.glob("/sys/class/thermal/cooling_device*/cur_state")),
                    reason="this machine has thermal or frequency data")
def test_a_target_without_data_is_said_once(probe, tmp_path):
    (tmp_path / "c.toml").write_text(work_campaign("thermal", 2, repetitions=10))
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=cli_env(probe), timeout=300)
    assert r.returncode == 0, r.stderr
    html = run_report(r)
    assert html.count(NO_DATA) == 1 and "FLAGGED" not in html
