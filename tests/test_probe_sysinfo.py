"""End-to-end tests of `rtvb-probe sysinfo`: each field against the source it claims.

Ground truth is read here, independently of the probe, from the same kernel
interfaces (uname, /proc, /sys, sched_getaffinity, clock_getres). A field whose
source is missing on this machine must be null, and that is checked too.
The cross-built probes are run under qemu-user.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from probe_records import records

pytestmark = pytest.mark.functional

SYS_CPU = Path("/sys/devices/system/cpu")


# --------------------------------------------------------------------------- helpers


def run_sysinfo(cmd: list[str], **kw) -> list[dict]:
    proc = subprocess.run([*cmd, "sysinfo"], capture_output=True, text=True, timeout=60, **kw)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    return records(proc.stdout)


def read(path: str | Path) -> str | None:
    """A file's text as the probe reports it (up to the first NUL, trailing
    whitespace removed), or None when it cannot be read."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    return data.split(b"\0", 1)[0].decode(errors="replace").rstrip()


def read_int(path: str | Path) -> int | None:
    s = read(path)
    return int(s) if s is not None else None


def bracketed(s: str | None) -> str | None:
    m = re.search(r"\[([^\]]*)\]", s or "")
    return m.group(1) if m else None


def cpu_list(s: str) -> list[int]:
    cpus: list[int] = []
    for part in filter(None, s.split(",")):
        lo, _, hi = part.partition("-")
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


def format_cpu_list(cpus: set[int]) -> str:
    runs: list[list[int]] = []
    for c in sorted(cpus):
        if runs and c == runs[-1][1] + 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    return ",".join(f"{a}-{b}" if b > a else f"{a}" for a, b in runs)


def cpuinfo_field(key: str) -> str | None:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        k, sep, v = line.partition(":")
        if sep and k.strip() == key:
            return v.strip()
    return None


def meminfo_bytes(key: str) -> int:
    m = re.search(rf"^{key}:\s+(\d+) kB$", Path("/proc/meminfo").read_text(), re.M)
    assert m, f"{key} missing from /proc/meminfo"
    return int(m.group(1)) * 1024


@pytest.fixture(scope="module")
def timed_run(probe: Path) -> tuple[list[dict], int]:
    """The records of one run, and the wall time (ns) from before its start to after its end."""
    t0 = time.monotonic_ns()
    recs = run_sysinfo([str(probe)])
    return recs, time.monotonic_ns() - t0


@pytest.fixture(scope="module")
def run(timed_run) -> list[dict]:
    return timed_run[0]


@pytest.fixture(scope="module")
def info(run: list[dict]) -> dict:
    return run[1]


# --------------------------------------------------------------------------- record stream

def test_records_are_meta_sysinfo_end(timed_run) -> None:
    run, wall_ns = timed_run
    assert [r["type"] for r in run] == ["meta", "sysinfo", "end"]
    meta, _, end = run
    assert meta["subcommand"] == "sysinfo"
    assert meta["schema"] == 1
    assert meta["argv"] == ["sysinfo"]
    assert meta["params"] == {}
    assert meta["privileges"] == {"euid": os.geteuid()}
    assert meta["arch"] == os.uname().machine
    assert end["status"] == "ok" and "error" not in end
    # Nanoseconds of the probe's own life, which lies within the time this test waited for it (about
    # 1 ms of the probe's own here; both stretch alike on a busy machine).
    assert isinstance(end["elapsed_ns"], int) and 0 < end["elapsed_ns"] < wall_ns


def test_help_prints_usage_and_no_records(probe: Path) -> None:
    proc = subprocess.run([str(probe), "sysinfo", "--help"], capture_output=True, text=True, timeout=10)
    assert proc.returncode == 0
    assert proc.stdout.startswith("usage: rtvb-probe sysinfo")
    assert '"type"' not in proc.stdout and proc.stderr == ""


@pytest.mark.parametrize("args", [["--bogus"], ["extra"], ["--help-me"], ["--bogus", "--help"]])
def test_unknown_argument_is_a_usage_error(probe: Path, args: list[str]) -> None:
    proc = subprocess.run([str(probe), "sysinfo", *args], capture_output=True, text=True, timeout=10)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("rtvb-probe sysinfo: ") and args[0] in lines[0]


# --------------------------------------------------------------------------- kernel

def test_kernel_identity_matches_uname(info: dict) -> None:
    u = os.uname()
    assert info["hostname"] == u.nodename
    assert info["kernel_release"] == u.release
    assert info["kernel_version"] == u.version
    assert info["machine"] == u.machine


def test_cmdline_matches_proc(info: dict) -> None:
    assert info["cmdline"] == Path("/proc/cmdline").read_text().rstrip("\n ")


def expected_preempt() -> tuple[str | None, str | None]:
    """The preemption model from the sources, in the documented order."""
    if read("/sys/kernel/realtime") == "1":
        return "rt", "/sys/kernel/realtime"
    m = re.search(r"\((\w+)\)", read("/sys/kernel/debug/sched/preempt") or "")
    if m:
        return f"dynamic:{m.group(1)}", "/sys/kernel/debug/sched/preempt"
    flags = os.uname().version.split()
    config = read(f"/boot/config-{os.uname().release}") or ""
    enabled = lambda opt: re.search(rf"^{opt}=y$", config, re.M) is not None  # noqa: E731
    if "PREEMPT_RT" in flags:
        return "rt", "uname"
    if "PREEMPT_DYNAMIC" in flags:
        boot = re.findall(r"(?:^|\s)preempt=(none|voluntary|full|lazy)(?=\s|$)", read("/proc/cmdline") or "")
        return (f"dynamic:{boot[-1]}", "/proc/cmdline") if boot else ("dynamic", "uname")
    if "PREEMPT" in flags:
        return ("lazy", "/boot/config") if enabled("CONFIG_PREEMPT_LAZY") else ("full", "uname")
    if enabled("CONFIG_PREEMPT_VOLUNTARY"):
        return "voluntary", "/boot/config"
    if enabled("CONFIG_PREEMPT_NONE"):
        return "none", "/boot/config"
    return None, None


def test_preempt_model_matches_sources(info: dict) -> None:
    assert (info["preempt_model"], info["preempt_source"]) == expected_preempt()


def test_preempt_model_consistent_with_uname_flags(info: dict) -> None:
    # Independent of the source order: whatever decided, it must not contradict uname -v.
    flags = os.uname().version.split()
    model = info["preempt_model"]
    if "PREEMPT_RT" in flags:
        assert model == "rt"
    elif "PREEMPT_DYNAMIC" in flags:
        assert model == "dynamic" or model.startswith("dynamic:")
    elif "PREEMPT" in flags:
        assert model in ("full", "lazy", "rt")
    else:
        assert model in ("voluntary", "none", "rt", None)


# --------------------------------------------------------------------------- hypervisor

def test_cpuid_hypervisor_bit_matches_cpuinfo_flag(info: dict) -> None:
    hv = info["hypervisor"]
    if platform.machine() not in ("x86_64", "i386", "i686"):
        assert hv["cpuid_bit"] is None and hv["cpuid_vendor"] is None
        return
    # The kernel's "hypervisor" cpuinfo flag is the same CPUID.1:ECX[31] bit.
    flags = (cpuinfo_field("flags") or "").split()
    assert hv["cpuid_bit"] == ("hypervisor" in flags)
    if hv["cpuid_bit"]:
        assert isinstance(hv["cpuid_vendor"], str) and 0 < len(hv["cpuid_vendor"]) <= 12
        assert hv["cpuid_vendor"].isprintable()
        # kvm-clock is registered only in KVM guests.
        if "kvm-clock" in (read(SYS_CPU.parent / "clocksource/clocksource0/available_clocksource") or ""):
            assert hv["cpuid_vendor"] == "KVMKVMKVM"
    else:
        assert hv["cpuid_vendor"] is None


def test_hypervisor_files_match(info: dict) -> None:
    hv = info["hypervisor"]
    assert hv["sys_hypervisor_type"] == read("/sys/hypervisor/type")
    assert hv["dmi_sys_vendor"] == read("/sys/class/dmi/id/sys_vendor")
    assert hv["dmi_product_name"] == read("/sys/class/dmi/id/product_name")
    dt = read("/proc/device-tree/model")
    assert hv["dt_model"] == (dt if dt is not None else read("/sys/firmware/devicetree/base/model"))
    assert hv["dt_hypervisor_compatible"] == read("/proc/device-tree/hypervisor/compatible")


def expected_container() -> tuple[str | None, str | None]:
    try:
        env = Path("/proc/1/environ").read_bytes().split(b"\0")
    except OSError:
        env = []
    for var in env:
        if var.startswith(b"container=") and len(var) > len(b"container="):
            return var[len(b"container="):].decode(), "/proc/1/environ"
    if read("/run/systemd/container"):
        return read("/run/systemd/container"), "/run/systemd/container"
    for path, name in (("/run/.containerenv", "podman"), ("/.dockerenv", "docker")):
        if os.path.lexists(path):
            return name, path
    cg = read("/proc/1/cgroup") or ""
    for pattern, name in (("/docker/", "docker"), ("/docker-", "docker"), ("/libpod-", "podman"),
                          ("/kubepods", "kubernetes"), ("/lxc/", "lxc"), ("/lxc.payload", "lxc")):
        if pattern in cg:
            return name, "/proc/1/cgroup"
    return None, None


def test_container_evidence(info: dict) -> None:
    hv = info["hypervisor"]
    assert (hv["container"], hv["container_source"]) == expected_container()


# --------------------------------------------------------------------------- clocks, CPUs

def test_clocksource_matches_sysfs(info: dict) -> None:
    cs = Path("/sys/devices/system/clocksource/clocksource0")
    assert info["clocksource"] == read(cs / "current_clocksource")
    avail = read(cs / "available_clocksource")
    assert info["clocksource_available"] == (avail.split() if avail is not None else None)
    if info["clocksource"] is not None:
        assert info["clocksource"] in info["clocksource_available"]


def test_clock_resolution_matches_clock_getres(info: dict) -> None:
    assert info["clock_resolution_ns"] == round(time.clock_getres(time.CLOCK_MONOTONIC) * 1e9)


def test_cpu_model_matches_cpuinfo(info: dict) -> None:
    model = next((v for v in (cpuinfo_field(k) for k in ("model name", "Processor", "cpu model", "uarch"))
                  if v is not None), None)
    assert info["cpu_model"] == model
    assert info["cpu_implementer"] == cpuinfo_field("CPU implementer")
    assert info["cpu_part"] == cpuinfo_field("CPU part")
    assert info["cpu_isa"] == cpuinfo_field("isa")


def test_online_cpus_match_sysfs_and_cpu_count(info: dict) -> None:
    online = read(SYS_CPU / "online")
    assert info["cpus_online"] == online
    assert info["cpus_online_count"] == len(cpu_list(online)) == os.cpu_count()


def test_allowed_cpus_follow_affinity(probe: Path, info: dict) -> None:
    mine = os.sched_getaffinity(0)
    assert info["cpus_allowed"] == format_cpu_list(mine)
    assert info["cpus_allowed_count"] == len(mine)
    # Narrow the probe to one CPU: the field must follow, not echo the machine.
    last = max(mine)
    rec = run_sysinfo([str(probe)], preexec_fn=lambda: os.sched_setaffinity(0, {last}))[1]
    assert rec["cpus_allowed"] == str(last) and rec["cpus_allowed_count"] == 1
    assert rec["cpus_online"] == info["cpus_online"]


def test_isolation_and_nohz_match_sysfs(info: dict) -> None:
    assert info["cpus_isolated"] == read(SYS_CPU / "isolated")
    nohz = read(SYS_CPU / "nohz_full")
    assert info["nohz_full"] == ("" if nohz == "(null)" else nohz)
    assert info["smt_control"] == read(SYS_CPU / "smt/control")


def test_cpufreq_matches_sysfs(info: dict) -> None:
    online = cpu_list(read(SYS_CPU / "online"))
    assert info["scaling_driver"] == read(SYS_CPU / f"cpu{online[0]}/cpufreq/scaling_driver")
    govs = {str(c): read(SYS_CPU / f"cpu{c}/cpufreq/scaling_governor") for c in online}
    govs = {c: g for c, g in govs.items() if g is not None}
    assert info["scaling_governors"] == (govs or None)


def test_cpuidle_matches_sysfs(info: dict) -> None:
    driver = read(SYS_CPU / "cpuidle/current_driver")
    if driver is None:
        assert info["cpuidle"] is None
        return
    cpu = cpu_list(read(SYS_CPU / "online"))[0]
    idle = info["cpuidle"]
    assert idle["driver"] == driver
    assert idle["governor"] == read(SYS_CPU / "cpuidle/current_governor")
    assert idle["cpu"] == cpu
    states = sorted((SYS_CPU / f"cpu{cpu}/cpuidle").glob("state[0-9]*"), key=lambda p: int(p.name[5:]))
    assert [s["name"] for s in idle["states"]] == [read(p / "name") for p in states]
    assert [s["exit_latency_us"] for s in idle["states"]] == [read_int(p / "latency") for p in states]
    assert [s["disabled"] for s in idle["states"]] == [read_int(p / "disable") != 0 for p in states]


def test_rt_throttling_matches_proc(info: dict) -> None:
    assert info["sched_rt_runtime_us"] == read_int("/proc/sys/kernel/sched_rt_runtime_us")
    assert info["sched_rt_period_us"] == read_int("/proc/sys/kernel/sched_rt_period_us")


# --------------------------------------------------------------------------- memory

def test_memory_matches_meminfo(probe: Path, info: dict) -> None:
    total = meminfo_bytes("MemTotal")
    assert info["mem_total_bytes"] == total
    assert 0 < info["mem_available_bytes"] <= total
    # MemAvailable moves with every other process on the machine, so the probe's reading is held to
    # readings taken right before and after a run of its own (a few ms), not to one taken seconds
    # after the module's run; the margin covers what others allocate or free in those milliseconds.
    before = meminfo_bytes("MemAvailable")
    rec = run_sysinfo([str(probe)])[1]
    after = meminfo_bytes("MemAvailable")
    assert rec["mem_total_bytes"] == total
    lo, hi = min(before, after), max(before, after)
    assert lo - 0.1 * total <= rec["mem_available_bytes"] <= hi + 0.1 * total, \
        (before, rec["mem_available_bytes"], after)


def test_thp_and_page_size(info: dict) -> None:
    thp = Path("/sys/kernel/mm/transparent_hugepage")
    assert info["thp_enabled"] == bracketed(read(thp / "enabled"))
    assert info["thp_defrag"] == bracketed(read(thp / "defrag"))
    assert info["page_size_bytes"] == os.sysconf("SC_PAGE_SIZE")


# --------------------------------------------------------------------------- cgroup

def cgroup_dir(controller: str | None) -> Path | None:
    """This process's cgroup directory for a v1 controller, or the v2 one
    (controller None); the probe runs as our child, in the same cgroup."""
    path = None
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        hid, ctrls, p = line.split(":", 2)
        if (controller is None and hid == "0" and ctrls == "") or controller in ctrls.split(","):
            path = p
            break
    if path is None:
        return None
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        pre, _, post = line.partition(" - ")
        root, mnt = pre.split()[3:5]
        fstype, _, opts = post.split()[:3]
        if fstype != ("cgroup2" if controller is None else "cgroup"):
            continue
        if controller is not None and controller not in opts.split(","):
            continue
        root = "" if root == "/" else root
        if path == root or path.startswith(root + "/"):
            return Path(mnt + path[len(root):])
    return None


def cgroup_read(controller: str | None, name: str) -> str | None:
    d = cgroup_dir(controller)
    return read(d / name) if d is not None else None


def test_cgroup_limits_match_files(info: dict) -> None:
    cg = info["cgroup"]
    lines = Path("/proc/self/cgroup").read_text().splitlines()
    v1 = any({"cpu", "memory"} & set(line.split(":")[1].split(",")) for line in lines)
    v2 = any(line.startswith("0::") for line in lines)
    assert cg["version"] == (1 if v1 else 2 if v2 else None)
    if cg["version"] == 2:
        assert cg["cpu_max"] == cgroup_read(None, "cpu.max")
        assert cg["memory_max"] == cgroup_read(None, "memory.max")
        assert cg["cpuset_cpus"] == cgroup_read(None, "cpuset.cpus.effective")
    elif cg["version"] == 1:
        quota = cgroup_read("cpu", "cpu.cfs_quota_us")
        period = cgroup_read("cpu", "cpu.cfs_period_us")
        expected_cpu = None
        if quota is not None and period is not None:
            expected_cpu = f"{'max' if int(quota) < 0 else quota} {period}"
        assert cg["cpu_max"] == expected_cpu
        limit = cgroup_read("memory", "memory.limit_in_bytes")
        page = os.sysconf("SC_PAGE_SIZE")
        unlimited = {(2**63 - 1) // page * page, (2**31 - 1) * page}
        assert cg["memory_max"] == (None if limit is None else "max" if int(limit) in unlimited else limit)
        cpus = cgroup_read("cpuset", "cpuset.effective_cpus") or cgroup_read("cpuset", "cpuset.cpus")
        assert cg["cpuset_cpus"] == cpus
    if cg["cpuset_cpus"]:
        # The affinity of a process is always within its cpuset.
        assert set(cpu_list(info["cpus_allowed"])) <= set(cpu_list(cg["cpuset_cpus"]))


# --------------------------------------------------------------------------- privilege

@pytest.mark.skipif(os.geteuid() != 0, reason="dropping privileges needs root")
def test_unprivileged_run_degrades_to_nulls_not_errors(probe: Path, info: dict) -> None:
    def drop() -> None:
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)

    recs = run_sysinfo([str(probe)], preexec_fn=drop)
    assert [r["type"] for r in recs] == ["meta", "sysinfo", "end"]
    assert recs[0]["privileges"] == {"euid": 65534}
    rec = recs[1]
    # World-readable sources give the same answers without privilege.
    for key in ("kernel_release", "cmdline", "clocksource", "cpus_online", "mem_total_bytes", "cgroup"):
        assert rec[key] == info[key], key
    assert rec["hypervisor"]["cpuid_bit"] == info["hypervisor"]["cpuid_bit"]


# --------------------------------------------------------------------------- cross builds

# What qemu-user's uname() reports for each cross build (its default CPU models).
CROSS = {
    "aarch64": ("qemu-aarch64-static", "aarch64"),
    "armhf": ("qemu-arm-static", "armv7l"),
    "riscv64": ("qemu-riscv64-static", "riscv64"),
}


@pytest.mark.parametrize("arch", sorted(CROSS))
def test_cross_built_probe_runs_under_qemu_user(cross_probes: dict[str, Path], arch: str) -> None:
    qemu, machine = CROSS[arch]
    if shutil.which(qemu) is None:
        pytest.skip(f"{qemu} is not installed")
    binary = cross_probes[arch]
    recs = run_sysinfo([qemu, str(binary)])
    assert [r["type"] for r in recs] == ["meta", "sysinfo", "end"]
    meta, rec, end = recs
    assert meta["arch"] == machine and rec["machine"] == machine
    assert end["status"] == "ok"
    # No CPUID outside x86: null, not a guess.
    assert rec["hypervisor"]["cpuid_bit"] is None and rec["hypervisor"]["cpuid_vendor"] is None
    # qemu-user runs on the host kernel: its identity and /proc show through.
    assert rec["kernel_release"] == os.uname().release
    assert rec["cmdline"] == Path("/proc/cmdline").read_text().rstrip("\n ")
    assert rec["mem_total_bytes"] == meminfo_bytes("MemTotal")
    assert rec["cpus_online_count"] == os.cpu_count()


def test_caches_are_the_ones_sysfs_lists_for_the_first_allowed_cpu(info):
    cpu = min(os.sched_getaffinity(0))
    base = Path(f"/sys/devices/system/cpu/cpu{cpu}/cache")
    expected = []
    for index in sorted(base.glob("index[0-9]*"), key=lambda p: int(p.name[5:])):
        size = read(index / "size")
        units = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}
        number, unit = (size[:-1], units[size[-1]]) if size and size[-1] in units else (size, 1)
        expected.append({"level": read_int(index / "level"), "type": read(index / "type"),
                         "size_bytes": int(number) * unit, "shared_cpus": read(index / "shared_cpu_list")})
    assert info["caches"] == (expected or None)
