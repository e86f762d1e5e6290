"""The typed records (rtvbench.records): each field decoded from the stored JSON as the probe and the
runner write it, and a record of an older probe, a truncated one or one with a wrong type decoded
with that field as None, never raising."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from rtvbench.records import HealthCheck, HostSample, Privileges, ProbeEnd, ThermalSample, Window, load_average

pytestmark = pytest.mark.unit


def test_a_window_keeps_its_bounds_and_every_figure():
    w = Window.of({"type": "window", "index": 3, "cpu": 1, "t_start_ns": 1_000, "t_end_ns": 5_000, "count": 40,
                   "missed": 2, "min_ns": 900, "max_ns": 51_000, "p99_ns": 30_000, "response_max_ns": None})
    assert (w.index, w.cpu, w.t_start_ns, w.t_end_ns, w.missed, w.length_ns) == (3, 1, 1_000, 5_000, 2, 4_000)
    # figures are the numeric fields only: a null (count 0) is absent, the bounds are not figures
    assert w.values == {"count": 40, "min_ns": 900, "max_ns": 51_000, "p99_ns": 30_000}


@pytest.mark.parametrize("record", [{}, {"type": "window"}, {"index": "3", "cpu": True, "t_start_ns": "x",
                                                             "missed": None, "max_ns": True}])
def test_a_truncated_or_mistyped_window_decodes_to_nones(record):
    w = Window.of(record)
    assert (w.index, w.cpu, w.t_start_ns, w.length_ns, w.missed, w.values) == (None, None, None, None, 0, {})


def test_a_health_check_and_a_soak_event():
    when = datetime(2026, 1, 1, tzinfo=timezone.utc)
    c = HealthCheck.of("guest", when, {"probe_ok": True, "answer_s": 0.1, "mem_used_kib": 51200,
                                      "qemu": [{"guest": 1, "pid": 4242, "rss_kib": 90000, "pss_kib": None}]})
    assert (c.event, c.probe_ok, c.mem_used_kib, c.error) == (None, True, 51200, None)
    assert [(g.guest, g.pid, g.rss_kib, g.pss_kib) for g in c.qemu] == [(1, 4242, 90000, None)]
    lost = HealthCheck.of("guest", None, {"event": "lost", "error": "the guest went away"})
    assert (lost.event, lost.probe_ok, lost.error, lost.qemu) == ("lost", False, "the guest went away", ())
    odd = HealthCheck.of("guest", None, {"probe_ok": "yes", "mem_used_kib": 1.5, "qemu": [7, {"pid": "x"}]})
    assert (odd.probe_ok, odd.mem_used_kib, [g.pid for g in odd.qemu]) == (False, None, [None])


def test_privileges_a_normal_policy_asked_for_no_real_time():
    meta = {"privileges": {"euid": 0, "rt_granted": False, "mlockall": True}, "params": {"policy": "other"}}
    assert Privileges.of(meta) == Privileges(0, None, True)
    meta["params"]["policy"] = "fifo"
    assert Privileges.of(meta) == Privileges(0, False, True)
    assert Privileges.of(None) == Privileges() and Privileges.of({"privileges": "x"}) == Privileges()


def test_a_host_sample_sums_each_threads_ticks_and_leaves_out_a_guest_it_cannot_divide():
    row = {"t": 12.5, "clock_ticks": 100, "guests": [
        {"guest": 1, "pid": 10, "vcpu": {"user": 300, "system": 20}, "other": {"user": 5, "system": 7},
         "vcpu_wait_ns": 4_000_000, "rss_kib": 204800, "pss_kib": 102400},
        {"guest": 2, "pid": 11, "vcpu": {"user": 1}},              # truncated: no system ticks, no other
        "junk"]}
    s = HostSample.of(row)
    assert (s.t, s.clock_ticks) == (12.5, 100)
    (g,) = s.guests
    assert (g.guest, g.pid, g.vcpu_ticks, g.other_ticks, g.vcpu_wait_ns, g.rss_kib, g.pss_kib) == \
        (1, 10, 320, 12, 4_000_000, 204800, 102400)
    assert HostSample.of(None) is None and HostSample.of({"guests": []}) is None      # no time: nothing to divide
    assert HostSample.of({"t": 1.0}).clock_ticks == 100                              # USER_HZ when not said


def test_a_thermal_sample_keeps_numbers_and_names_and_drops_the_rest():
    s = ThermalSample.of({"seq": 0, "temp_mC": {"thermal_zone0": 45000, "bad": "hot"}, "freq_khz": {"cpu0": 2_000_000},
                          "throttle": {"cpu0.core_throttle_count": 3}, "cooling": {"cooling_device0": True},
                          "zones": {"thermal_zone0": {"type": "x86_pkg_temp", "trips": [
                              {"type": "passive", "temp_mC": 95000}, {"type": "hot"}, "x"]}},
                          "cooling_devices": {"cooling_device0": {"type": "Fan"}, "cooling_device1": {}}})
    assert (s.seq, s.temp_mC, s.freq_khz, s.throttle, s.cooling) == \
        (0, {"thermal_zone0": 45000}, {"cpu0": 2_000_000}, {"cpu0.core_throttle_count": 3}, {})
    assert s.zone_types == {"thermal_zone0": "x86_pkg_temp"} and s.cooling_types == {"cooling_device0": "Fan"}
    assert [(t.type, t.temp_mC) for t in s.zone_trips["thermal_zone0"]] == [("passive", 95000)]
    assert ThermalSample.of("x") is None
    bare = ThermalSample.of({})
    assert (bare.seq, bare.temp_mC, bare.zone_trips) == (None, {}, {})


def test_the_probes_end_and_the_load_average():
    e = ProbeEnd.of({"type": "end", "status": "ok", "elapsed_ns": 1_000_000_000, "cpu_time_ns": 12_000_000})
    assert (e.status, e.elapsed_ns, e.cpu_time_ns) == ("ok", 1_000_000_000, 12_000_000)
    old = ProbeEnd.of({"type": "end", "status": "ok"})          # a probe that did not count its CPU time
    assert (old.elapsed_ns, old.cpu_time_ns) == (None, None) and ProbeEnd.of(None) is None
    assert load_average({"1": 2.5, "5": 1.0, "15": 0.5}) == 2.5
    assert load_average({"1": "high"}) is None and load_average(None) is None
