"""Preflight warnings: exact warnings for crafted fingerprints and campaigns, none for clean ones, and the
warnings this machine deserves from its real fingerprint."""

from __future__ import annotations

import copy
import os
from pathlib import Path

import pytest

from rtvbench.campaign.reader import parse_campaign, recorded_campaign, spec_of
from rtvbench.cpulist import parse_cpu_list
from rtvbench.preflight import CODES, Observed, PreflightWarning, check, observed_privileges
from rtvbench.records import Privileges
from rtvbench.results import Measurement

pytestmark = pytest.mark.functional

SYSINFO = {
    "type": "sysinfo", "hostname": "board", "kernel_release": "6.6.0-rt15", "machine": "aarch64",
    "preempt_model": "rt", "preempt_source": "/sys/kernel/realtime",
    "hypervisor": {"cpuid_bit": None, "cpuid_vendor": None, "sys_hypervisor_type": None, "dmi_sys_vendor": None,
                   "dmi_product_name": None, "dt_model": "Board X", "dt_hypervisor_compatible": None,
                   "container": None, "container_source": None},
    "clocksource": "arch_sys_counter", "cpu_model": None, "cpu_implementer": "0x41", "cpu_part": "0xd08",
    "cpus_online": "0-3", "cpus_online_count": 4, "cpus_allowed": "0-3", "cpus_allowed_count": 4,
    "cpus_isolated": "", "nohz_full": "", "smt_control": "notsupported", "scaling_driver": "cpufreq-dt",
    "scaling_governors": {"0": "performance", "1": "performance", "2": "performance", "3": "performance"},
    "cpuidle": None, "sched_rt_runtime_us": 950000, "sched_rt_period_us": 1000000,
    "mem_total_bytes": 4 << 30, "mem_available_bytes": 3 << 30, "thp_enabled": "madvise", "thp_defrag": "madvise",
    "page_size_bytes": 4096, "cgroup": {"version": 2, "cpu_max": None, "memory_max": None, "cpuset_cpus": None},
}
META = {"type": "meta", "subcommand": "sysinfo", "privileges": {"euid": 0}}
LOCAL = {"target": "local", "hostname": "board", "arch": "aarch64"}

CAMPAIGN = {
    "name": "t", "environments": {"native": {"target": "local"}},
    "loads": {"idle": {}, "cpu": {"kind": "cpu", "percent": 50, "workers": 2}},
    "benchmarks": {"wakeup": {"kind": "latency", "interval_us": 200, "duration_s": 1, "priority": 80},
                   "bw": {"kind": "mem-bw", "threads": 2}},
}


def fp(sysinfo=None, describe=None, meta=None, **changes):
    s = copy.deepcopy(SYSINFO)
    s.update(sysinfo or {})
    s.update(changes)
    return (copy.deepcopy(describe or LOCAL), s, copy.deepcopy(meta or META))


def campaign(**sections):
    c = copy.deepcopy(CAMPAIGN)
    for key, value in sections.items():
        c[key] = value
    return c


def check_(campaign, *args):
    """check() of a campaign given as its parsed dict or as a validated Campaign."""
    return check(campaign.spec() if hasattr(campaign, "spec") else spec_of(campaign), *args)


def codes(warnings):
    return [(w.environment, w.code) for w in warnings]


def test_clean_environment_and_campaign_give_no_warning():
    assert check_(CAMPAIGN, {"native": fp()}) == []


def test_a_validated_campaign_object_is_read_like_its_dict():
    text = """
name = "t"
[environments.native]
target = "ssh"
host = "board.example"
[loads.hog]
kind = "cpu"
workers = 6
[benchmarks.wakeup]
kind = "latency"
duration_s = 1
cpus = [0, 7]
"""
    c = parse_campaign(text)
    got = check_(c, {"native": fp()})
    assert got == check_(c.data, {"native": fp()})
    assert codes(got) == [("native", "cpu_unavailable"), ("native", "too_few_cpus")]


def test_tcg_guest_is_an_emulator_and_kvm_is_not():
    # What a qemu target describes: the warning follows its `emulated`, not its kind.
    tcg = {"target": "qemu", "arch": "aarch64", "accel": "tcg", "emulated": True, "cpus": 2, "memory_mb": 512}
    kvm = dict(tcg, accel="kvm", emulated=False)
    got = check_(CAMPAIGN, {"native": fp(), "guest": fp(describe=tcg), "vm": fp(describe=kvm)})
    assert codes(got) == [("guest", "tcg")]
    assert "measure an emulator, not the hypervisor" in got[0].message and "/dev/kvm" in got[0].message


def test_not_root_warns_only_when_real_time_is_asked_for():
    user = {"type": "meta", "privileges": {"euid": 1000}}
    [w] = check_(CAMPAIGN, {"native": fp(meta=user)})
    assert (w.code, w.environment) == ("rt_not_root", "native")
    assert "user id 1000" in w.message and "`wakeup`" in w.message and "RLIMIT_RTPRIO" in w.message
    other = campaign(benchmarks={"w": {"kind": "latency", "duration_s": 1, "policy": "other"}})
    assert check_(other, {"native": fp(meta=user)}) == []
    # An RT load asks for it too, in the environment it runs in.
    rt_load = campaign(benchmarks={"bw": {"kind": "mem-bw"}},
                       loads={"rt": {"kind": "cpu", "policy": "fifo", "priority": 10}})
    assert codes(check_(rt_load, {"native": fp(meta=user, sched_rt_runtime_us=-1)})) == [("native", "rt_not_root")]
    # A sysinfo meta without privileges (an old probe) is no evidence either way.
    assert check_(CAMPAIGN, {"native": fp(meta={"type": "meta"})}) == []


def test_observed_privileges_replace_the_guess():
    user = {"type": "meta", "privileges": {"euid": 1000}}
    granted = {"native": Observed(rt_requested=5, mlock_requested=5)}
    assert check_(CAMPAIGN, {"native": fp(meta=user)}, granted) == []
    refused = {"native": Observed(rt_requested=5, rt_refused=2, mlock_requested=5, mlock_refused=5,
                                  benchmarks_refused=["wakeup"])}
    got = check_(CAMPAIGN, {"native": fp()}, refused)
    assert codes(got) == [("native", "no_rt_priority"), ("native", "no_mlockall")]
    assert "refused in 2 of 5 measurements in `native` (`wakeup`)" in got[0].message
    assert "normal-priority thread" in got[0].message
    assert "refused in 5 of 5" in got[1].message


def _m(mid, env, privileges=None, warnings=()):
    meta = {"type": "meta", "privileges": privileges} if privileges is not None else None
    return Measurement(id=mid, environment=env, load="idle", benchmark="wakeup", kind="latency", repetition=mid,
                       status="ok", command=[], load_commands=[], started_at=None, finished_at=None, meta=meta,
                       results=[], warnings=list(warnings))


def test_observed_privileges_count_meta_and_warning_records():
    ms = [_m(1, "a", {"rt_granted": True, "mlockall": True}),
          _m(2, "a", {"rt_granted": False, "mlockall": True}),
          _m(3, "b", {"rt_granted": True, "mlockall": False}, [{"code": "no_mlockall", "message": "x"}]),
          _m(4, "b", None, [{"code": "no_rt_policy", "message": "x"}]),
          _m(5, "c", {"euid": 0})]           # a kind that asks for neither
    got = observed_privileges(ms)
    assert (got["a"].rt_requested, got["a"].rt_refused, got["a"].mlock_requested, got["a"].mlock_refused) == (2, 1, 2, 0)
    assert (got["b"].rt_requested, got["b"].rt_refused, got["b"].mlock_requested, got["b"].mlock_refused) == (2, 1, 1, 1)
    assert (got["c"].rt_requested, got["c"].mlock_requested) == (0, 0)


def test_governor_other_than_performance_and_no_cpufreq():
    govs = {"0": "performance", "1": "powersave", "2": "powersave", "3": "schedutil"}
    [w] = check_(CAMPAIGN, {"native": fp(scaling_governors=govs)})
    assert w.code == "governor"
    assert "(`powersave` on CPUs 1-2; `schedutil` on CPU 3)" in w.message and "performance" in w.message
    assert check_(CAMPAIGN, {"native": fp(scaling_governors=None, scaling_driver=None)}) == []


def test_thp_always_and_cpu_quota():
    [w] = check_(CAMPAIGN, {"native": fp(thp_enabled="always")})
    assert w.code == "thp_always" and "madvise" in w.message
    assert check_(CAMPAIGN, {"native": fp(thp_enabled="never")}) == []
    cg = {"version": 2, "cpu_max": "50000 100000", "memory_max": "max", "cpuset_cpus": "0-3"}
    [w] = check_(CAMPAIGN, {"native": fp(cgroup=cg)})
    assert w.code == "cpu_quota" and "only 50000 us of CPU time every 100000 us" in w.message
    assert check_(CAMPAIGN, {"native": fp(cgroup=dict(cg, cpu_max="max 100000"))}) == []


def test_rt_throttling_matters_only_with_a_real_time_load():
    rt = campaign(loads={"idle": {}, "hog": {"kind": "cpu", "policy": "fifo", "priority": 10, "cpus": [3]}})
    [w] = check_(rt, {"native": fp()})
    assert w.code == "rt_throttling" and "`hog`" in w.message and "950000 us of every 1000000 us" in w.message
    assert check_(rt, {"native": fp(sched_rt_runtime_us=-1)}) == []
    assert check_(CAMPAIGN, {"native": fp()}) == []


def test_fewer_cpus_than_asked_for():
    c = campaign(benchmarks={"wakeup": {"kind": "latency", "duration_s": 1, "cpus": "2-5"},
                             "bw": {"kind": "mem-bw", "threads": 8},
                             "bw2": {"kind": "mem-bw", "threads": 2, "cpus": [1]}},
                 loads={"idle": {}, "wide": {"kind": "mem", "workers": 6},
                        "narrow": {"kind": "cpu", "workers": 2, "cpus": [1]},
                        "away": {"kind": "cpu", "cpus": [9]},
                        "stress": {"command": "stress-ng --cpu 64"}})       # a command's threads are unknown
    got = check_(c, {"native": fp()})
    assert codes(got) == [("native", "cpu_unavailable")] * 2 + [("native", "too_few_cpus")] * 4 + \
        [("native", "load_shares_cpu")]
    msgs = [w.message for w in got]
    assert "benchmark `wakeup` is pinned to CPUs 4-5 but the probe may use only CPUs 0-3 in `native`" in msgs[0]
    assert "every measurement of it fails" in msgs[0]
    assert "load `away` is pinned to CPU 9" in msgs[1] and "cannot start" in msgs[1]
    assert "`bw` runs 8 threads on the 4 CPUs the probe may use in `native` (0-3)" in msgs[2]
    assert "at most 4." in msgs[2]
    assert "`bw2` runs 2 threads on CPU 1 in `native`" in msgs[3] and "at most 1 or list more CPUs" in msgs[3]
    assert "load `wide` starts 6 workers" in msgs[4] and "load `narrow` starts 2 workers on CPU 1" in msgs[5]
    assert "benchmark `bw2` and load `narrow` are both pinned to CPU 1" in msgs[6]
    # On 8 CPUs only the CPU 9 pin and the two things pinned to CPU 1 are left.
    eight = fp(cpus_online="0-7", cpus_online_count=8, cpus_allowed="0-7", cpus_allowed_count=8)
    assert [(w.code, w.message.split("`")[1]) for w in check_(c, {"native": eight})] == [
        ("cpu_unavailable", "away"), ("too_few_cpus", "bw2"), ("too_few_cpus", "narrow"), ("load_shares_cpu", "bw2")]


def test_cpu_count_of_a_guest_without_sysinfo_comes_from_describe():
    guest = ({"target": "qemu", "accel": "kvm", "cpus": 2}, {}, META)
    c = campaign(loads={"idle": {}, "hog": {"kind": "cpu", "workers": 4}})
    assert codes(check_(c, {"guest": guest})) == [("guest", "too_few_cpus")]


def _pinned(bench, load):
    return campaign(benchmarks={"b": bench}, loads={"idle": {}, "l": load})


def test_load_on_the_measured_cpu_rule():
    env = {"native": fp(sched_rt_runtime_us=-1)}
    rt_lat = {"kind": "latency", "duration_s": 1, "priority": 80, "cpus": [1]}
    # Interference on the same core, the measuring thread on top: the point of the test.
    assert check_(_pinned(rt_lat, {"kind": "cpu", "cpus": [1]}), env) == []
    assert check_(_pinned(rt_lat, {"kind": "cpu", "cpus": [1], "policy": "fifo", "priority": 50}), env) == []
    # A load at the same or a higher RT priority: the measurement waits for the load (pinned or not).
    [w] = check_(_pinned(rt_lat, {"kind": "cpu", "cpus": "1", "policy": "fifo", "priority": 80}), env)
    assert w.code == "load_outranks_measurement" and "priority 80, not below the 80 of benchmark `b`" in w.message
    [w] = check_(_pinned(rt_lat, {"kind": "cpu", "policy": "rr", "priority": 99}), env)
    assert w.code == "load_outranks_measurement" and "on CPU 1 in `native`" in w.message
    # A normal-priority measurement pinned with a pinned load: time-sharing, not interference.
    other_lat = dict(rt_lat, policy="other")
    del other_lat["priority"]
    [w] = check_(_pinned(other_lat, {"kind": "cpu", "cpus": [0, 1]}), env)
    assert w.code == "load_shares_cpu" and "wake-ups wait for the load's time slice" in w.message
    [w] = check_(_pinned({"kind": "mem-bw", "cpus": [2]}, {"kind": "mem", "cpus": [2, 3]}), env)
    assert w.code == "load_shares_cpu" and "both pinned to CPU 2" in w.message and "take turns" in w.message
    [w] = check_(_pinned({"kind": "ipc", "cpus": [0, 3]}, {"kind": "mem", "cpus": [3]}), env)
    assert w.code == "load_shares_cpu"
    # Apart, or placed by the scheduler: no warning.
    assert check_(_pinned({"kind": "mem-bw", "cpus": [2]}, {"kind": "mem", "cpus": [3]}), env) == []
    assert check_(_pinned({"kind": "mem-bw", "cpus": [2]}, {"kind": "mem"}), env) == []
    assert check_(_pinned({"kind": "mem-bw"}, {"kind": "mem", "cpus": [2]}), env) == []


def test_a_neighbour_load_shares_cpus_only_with_its_own_environment():
    c = campaign(environments={"native": {"target": "local"}, "guest": {"target": "local"}},
                 benchmarks={"bw": {"kind": "mem-bw", "cpus": [1]}},
                 loads={"idle": {}, "noisy": {"kind": "mem", "cpus": [1], "workers": 8, "where": "guest"}})
    got = check_(c, {"native": fp(), "guest": fp()})
    assert codes(got) == [("guest", "too_few_cpus"), ("guest", "load_shares_cpu")]


def test_warnings_come_in_environment_then_code_order():
    tcg = {"target": "qemu", "accel": "tcg", "emulated": True, "cpus": 4}
    user = {"type": "meta", "privileges": {"euid": 1000}}
    c = campaign(environments={"native": {"target": "local"}, "guest": {"target": "qemu"}})
    got = check_(c, {"guest": fp(describe=tcg, meta=user, thp_enabled="always"),
                    "native": fp(scaling_governors={"0": "ondemand"})})
    assert codes(got) == [("native", "governor"), ("guest", "tcg"), ("guest", "rt_not_root"),
                          ("guest", "thp_always")]
    assert all(w.code in CODES and w.message.endswith(".") and "\n" not in w.message for w in got)
    assert got[0].to_dict() == {"environment": "native", "code": "governor", "message": got[0].message}


def test_cpu_lists():
    assert parse_cpu_list("0-3,6") == [0, 1, 2, 3, 6]
    assert parse_cpu_list([3, 1, 1]) == [1, 3] and parse_cpu_list(2) == [2] and parse_cpu_list("") == []
    assert parse_cpu_list("3-1") is None and parse_cpu_list("x") is None and parse_cpu_list(True) is None


# ---------------------------------------------------------------------------
# This machine


def _sys(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def test_this_machine_gets_the_warnings_it_deserves(probe):
    """The real local fingerprint, taken the way the runner takes it, checked against /sys and /proc read
    here independently: governor, THP, RT throttling, privileges and the CPUs the probe may use."""
    from rtvbench.runner.run import Runner

    ncpu = len(os.sched_getaffinity(0))
    text = f"""
name = "this-machine"
[environments.native]
target = "local"
[loads.idle]
[loads.rt]
kind = "cpu"
policy = "fifo"
priority = 10
cpus = [0]
[benchmarks.wakeup]
kind = "latency"
duration_s = 1
priority = 80
cpus = "0-{ncpu}"
"""
    # Built as a recorded campaign is, without checking this machine: validate refuses CPU `ncpu` here.
    c = recorded_campaign(text)
    runner = Runner(c, engine=None)
    runner.probes["native"] = str(probe)
    describe, sysinfo, meta = runner._fingerprint("native")
    got = check_(c, {"native": (describe, sysinfo, meta)})

    expected = []
    if os.geteuid() != 0:
        expected.append("rt_not_root")
    quota = _sys("/sys/fs/cgroup/cpu.max") or ""
    if quota and quota.split()[0] != "max":
        expected.append("cpu_quota")
    governors = {_sys(str(p)) for p in Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_governor")}
    if governors - {None, "performance"}:
        expected.append("governor")
    thp = _sys("/sys/kernel/mm/transparent_hugepage/enabled") or ""
    if "[always]" in thp:
        expected.append("thp_always")
    runtime = int(_sys("/proc/sys/kernel/sched_rt_runtime_us") or -1)
    period = int(_sys("/proc/sys/kernel/sched_rt_period_us") or 0)
    if 0 <= runtime < period:
        expected.append("rt_throttling")
    expected.append("cpu_unavailable")          # CPU `ncpu` is one past the last allowed one
    # Whether other processes keep this machine busy depends on what else runs on it (another test
    # run, a build): that warning is tested with a spinner of known load in test_conditions.py.
    assert [w.code for w in got if w.code != "busy"] == expected, [w.message for w in got]
    assert f"pinned to CPU {max(os.sched_getaffinity(0)) + 1}" in got[-1].message

    # What this VM is (checked above independently): no cpufreq, THP not "always", root.
    if not governors and "[always]" not in thp and os.geteuid() == 0:
        assert sysinfo["scaling_governors"] is None
        assert not {"governor", "thp_always", "rt_not_root"} & set(expected)


def test_warning_is_a_plain_record():
    w = PreflightWarning("e", "tcg", "m.")
    assert (w.environment, w.code, w.message) == ("e", "tcg", "m.")
    with pytest.raises(AttributeError):
        w.code = "x"    # frozen: the runner and the report share them


def test_neighbour_guests_are_checked_for_cpus_but_share_none():
    c = campaign(benchmarks={"wakeup": {"kind": "latency", "duration_s": 1, "cpus": [0]}},
                 loads={"idle": {}, "noisy": {"kind": "cpu", "cpus": [0], "workers": 3, "where": "neighbours",
                                              "policy": "fifo", "priority": 90}})
    guest = fp(describe={"target": "qemu", "accel": "kvm", "cpus": 2, "count": 3}, cpus_online="0-1",
               cpus_online_count=2, cpus_allowed="0-1", cpus_allowed_count=2, sched_rt_runtime_us=-1)
    assert codes(check_(c, {"vms": guest})) == [("vms", "too_few_cpus")]


def test_the_runner_says_the_preflight_warnings_before_measuring(tmp_path, probe):
    """`rtvbench run` prints the warnings of its environments' fresh fingerprints, before the first
    measurement, and runs anyway (a warning is not an error)."""
    from host_helpers import cli_env, run_cli
    (tmp_path / "c.toml").write_text("""
name = "pinned-together"
repetitions = 1

[environments.native]
target = "local"

[loads.hog]
kind = "cpu"
percent = 20
cpus = [0]

[benchmarks.wakeup]
kind = "latency"
interval_us = 1000
duration_s = 0.3
policy = "other"
cpus = [0]
""")
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=cli_env(probe))
    assert r.returncode == 0, r.stderr
    err = " ".join(r.stderr.split())            # Rich wraps long lines
    said = ("preflight warning: benchmark `wakeup` and load `hog` are both pinned to CPU 0 in `native` and the "
            "benchmark does not run at a real-time priority")
    assert said in err, r.stderr
    assert err.index("preflight warning") < err.index("Running campaign")


def test_privileges_are_decoded_once_and_a_normal_policy_asked_for_nothing():
    def meta(privileges, policy=None):
        return {"type": "meta", "privileges": privileges, **({"params": {"policy": policy}} if policy else {})}
    # A latency run at policy other prints rt_granted false: it asked for no real-time priority,
    # so nothing was refused (the report once said "NOT granted" of it).
    assert Privileges.of(meta({"rt_granted": False, "mlockall": True, "euid": 0}, "other")) == \
        Privileges(euid=0, rt_granted=None, mlockall=True)
    assert Privileges.of(meta({"rt_granted": False, "policy": "other"}, "fifo")).rt_granted is False   # refused
    assert Privileges.of(meta({"rt_granted": True}, "rr")).rt_granted is True
    assert Privileges.of(meta({"rt_granted": False})).rt_granted is False      # a meta without its params
    assert Privileges.of(meta({"rt_granted": None, "euid": True})) == Privileges()   # a load's; a bool is no euid
    assert Privileges.of(None) == Privileges.of({"type": "meta"}) == Privileges()
    ms = [_m(1, "a", {"rt_granted": False, "mlockall": True})]
    ms[0].meta["params"] = {"policy": "other"}
    assert observed_privileges(ms)["a"].rt_requested == 0
