"""The qemu target: the agent protocol client against the real `rtvb-probe agent`, the initramfs
it writes, real TCG boots of an x86_64 and an aarch64 guest (measurements, a killed and a hung
QEMU, N guests at once) and a native-vs-guest campaign end to end.

Kernels come from `make kernels` (rtvbench kernel fetch into kernels/, kept between runs)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from host_helpers import cli_env, kill_all, processes_with, run_cli, wait_for
from rtvbench.campaign.reader import CampaignError, parse_campaign
from rtvbench.errors import InputError, RtvbenchError, TargetError, TargetLost
from rtvbench.kinds.latency.attribution import attribute
from rtvbench.procstat import parse_proc_stat
from rtvbench.runner.thermal_sampler import ThermalSampler
from rtvbench.store import load_run, open_store
from rtvbench.targets.base import Deadline
from rtvbench.targets.qemu.channel import AgentChannel
from rtvbench.targets.qemu.guest import GuestConfig, QemuGuest
from rtvbench.targets.qemu.initramfs import build_initramfs, kernel_release, resolve_modules
from rtvbench.targets.qemu.target import ChannelTarget, QemuTarget

REPO = Path(__file__).resolve().parent.parent
KERNELS = REPO / "kernels"          # `make kernels`
# Campaign keys of a guest that only stop a hung test: a TCG boot takes seconds on a quiet machine
# and a minute or more on a busy one, and a guest starved of CPU may send its heartbeat late.
GUARDS = "boot_timeout_s = 600\nhang_timeout_s = 120\n"


# ---------------------------------------------------------------------------
# The protocol client against the real agent (no QEMU)


class AgentTarget(ChannelTarget):
    """The guest-side commands of the qemu target, served by `rtvb-probe agent --fd` on the host."""

    def __init__(self, guest: QemuGuest) -> None:
        super().__init__("agent", None)
        self.guest = guest

    def _guest(self) -> QemuGuest:
        return self.guest

    def _guest_record(self) -> QemuGuest:
        return self.guest

    def describe(self):
        return {}

    def deploy_probe(self) -> str:
        return "/init"


@pytest.fixture
def agent(probe):
    host, guest_end = socket.socketpair()
    proc = subprocess.Popen([str(probe), "agent", "--fd", str(guest_end.fileno())],
                            pass_fds=[guest_end.fileno()], start_new_session=True)
    guest_end.close()
    cfg = GuestConfig(arch="x86_64", qemu="none", kernel=Path("/"), initrd=Path("/"), cmdline="",
                      accel="tcg", cpus=1, memory_mb=64, boot_timeout_s=10, hang_timeout_s=3)
    guest = QemuGuest(cfg, "the agent under test")
    guest.proc, guest.channel, guest.started_at = proc, AgentChannel(host), time.monotonic()
    assert guest.await_ready()
    yield AgentTarget(guest)
    guest.kill()


def test_agent_ready_line(agent):
    g = agent.guest
    assert g.version and g.version[0].isdigit()
    assert g.boottime_ns > 0
    assert g.boot_s < 10


def test_run_streams_stdout_collects_stderr_and_status(agent):
    lines = []
    done = agent.run(["/bin/sh", "-c", "echo one; echo oops >&2; echo 'two  spaced'; printf tail; exit 3"],
                     lines.append)
    assert lines == ["one", "two  spaced", "tail"]
    assert done.returncode == 3 and done.stderr == "oops" and not done.interrupted


def test_arguments_arrive_byte_exact(agent):
    args = ["", "a b", "é\t✓", "-", "--x=1"]
    lines = []
    agent.run(["/bin/sh", "-c", 'for a in "$@"; do printf "[%s]\\n" "$a"; done', "sh", *args], lines.append)
    assert lines == [f"[{a}]" for a in args]


def test_exec_failure_is_127_with_the_reason(agent):
    done = agent.run(["/no/such/program"], lambda line: None)
    assert done.returncode == 127 and "/no/such/program" in done.stderr


def test_read_file(agent, tmp_path):
    f = tmp_path / "x.txt"
    f.write_text("alpha\nbeta\n")
    assert agent.read_file(str(f)) == "alpha\nbeta\n"
    assert parse_proc_stat(agent.read_file("/proc/stat"))
    with pytest.raises(TargetError, match="cannot read /no/such/file"):
        agent.read_file("/no/such/file")


def test_interrupted_run_delivers_the_probe_results(agent, probe):
    records = []

    def on_line(line: str) -> None:
        records.append(json.loads(line))
        if len(records) == 1:
            raise KeyboardInterrupt         # as if the user pressed Ctrl-C while it ran
    started = time.monotonic()
    done = agent.run([str(probe), "latency", "--duration-s", "60", "--interval-us", "1000"], on_line)
    assert done.interrupted and time.monotonic() - started < 10
    assert records[-1]["type"] == "end" and records[-1]["status"] == "interrupted"
    assert any(r["type"] == "result" for r in records)
    assert agent.guest.channel.active() == 0


def test_on_line_error_kills_the_command_and_propagates(agent):
    def on_line(line: str) -> None:
        raise ValueError("bad line")
    with pytest.raises(ValueError, match="bad line"):
        agent.run(["/bin/sh", "-c", "echo x; sleep 60"], on_line)
    deadline = time.monotonic() + 5
    while agent.guest.channel.active() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert agent.guest.channel.active() == 0
    assert agent.run(["/bin/true"], lambda line: None).returncode == 0   # the channel still works


def test_background_load_streams_and_stops(agent, probe):
    records = []
    bg = agent.start_background([str(probe), "load", "--kind", "cpu", "--percent", "20"],
                                lambda line: records.append(json.loads(line)))
    time.sleep(1.0)
    assert bg.poll() is None
    started = time.monotonic()
    bg.stop()
    assert time.monotonic() - started < 4
    assert bg.poll() == 0
    assert records[0]["type"] == "meta" and records[-1]["type"] == "end"     # delivered before stop() returned
    bg.stop()                                                                # idempotent


def test_background_without_on_line_keeps_its_output(agent):
    bg = agent.start_background(["/bin/sh", "-c", "echo said; echo complained >&2; exit 4"])
    deadline = time.monotonic() + 5
    while bg.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert bg.poll() == 4
    assert "said" in bg.output_tail() and "complained" in bg.output_tail()


def test_stop_escalates_to_sigkill(agent):
    bg = agent.start_background(["/bin/sh", "-c", "trap '' TERM; while :; do sleep 0.1; done"])
    time.sleep(0.3)
    bg.stop()
    assert bg.poll() == 128 + 9


@pytest.mark.functional
def test_a_run_past_its_deadline_is_stopped_with_its_group(agent):
    # Everything in the group ignores SIGTERM; the agent's SIGKILL to the group ends the command and
    # what it started, which would otherwise run a minute (the bounds are hang guards).
    marker = f"60.{os.getpid()}{time.monotonic_ns() % 10**6}"
    lines = []
    try:
        done = agent.run(["/bin/sh", "-c", f"trap '' TERM; sleep {marker} & echo end; sleep {marker}"],
                         lines.append, Deadline(0.5))
        wait_for(lambda: processes_with(f"sleep {marker}") == [], 30, "the command's group to end")
    finally:
        kill_all(f"sleep {marker}")
    assert lines == ["end"]
    assert (done.overdue, done.killed, done.returncode) == (True, True, 128 + 9), done


def test_dead_agent_is_target_lost(agent):
    def on_line(line: str) -> None:
        os.kill(agent.guest.proc.pid, signal.SIGKILL)
    with pytest.raises(TargetLost, match="was lost during"):
        agent.run(["/bin/sh", "-c", "echo go; sleep 30"], on_line)
    assert not agent.guest.up


def test_silent_agent_is_a_hang(agent):
    """No tick for hang_timeout_s (3 s here) while a command runs: the guest counts as hung."""
    def on_line(line: str) -> None:
        os.kill(agent.guest.proc.pid, signal.SIGSTOP)
    started = time.monotonic()
    with pytest.raises(TargetLost, match="no heartbeat for 3 s"):
        agent.run(["/bin/sh", "-c", "echo go; sleep 30"], on_line)
    assert 2.5 < time.monotonic() - started < 10
    assert agent.guest.proc is None            # killed, even though it was stopped


def test_check_program_only_the_probe(agent):
    assert agent.check_program("/init") is None
    assert "only rtvb-probe" in agent.check_program("stress-ng")


# ---------------------------------------------------------------------------
# initramfs


def parse_newc(data: bytes) -> dict[str, tuple[int, tuple[int, int], bytes]]:
    """name -> (mode, (rdevmajor, rdevminor), data), read back independently of the writer."""
    out, pos = {}, 0
    while True:
        assert data[pos:pos + 6] == b"070701", f"bad magic at {pos}"
        f = [int(data[pos + 6 + 8 * i:pos + 14 + 8 * i], 16) for i in range(13)]
        mode, size, rmaj, rmin, namesize = f[1], f[6], f[9], f[10], f[11]
        name = data[pos + 110:pos + 110 + namesize - 1].decode()
        pos = (pos + 110 + namesize + 3) & ~3
        body = data[pos:pos + size]
        pos = (pos + size + 3) & ~3
        if name == "TRAILER!!!":
            return out
        out[name] = (mode, (rmaj, rmin), body)


def fake_module(path: Path, name: str, depends: list[str], vermagic: str = "6.1.0-test SMP mod_unload") -> None:
    """A minimal relocatable ELF with only a .modinfo section, as a .ko carries it."""
    modinfo = b"".join(f"{k}={v}\0".encode() for k, v in
                       (("license", "GPL"), ("depends", ",".join(depends)), ("name", name),
                        ("vermagic", vermagic)))
    shstrtab = b"\0.modinfo\0.shstrtab\0"
    mod_off, str_off = 64, 64 + len(modinfo)
    shoff = (str_off + len(shstrtab) + 7) & ~7
    ehdr = struct.pack("<4s5B7xHHIQQQIHHHHHH", b"\x7fELF", 2, 1, 1, 0, 0, 1, 62, 1, 0, 0, shoff,
                       0, 64, 0, 0, 64, 3, 2)
    sh = [bytes(64),
          struct.pack("<IIQQQQIIQQ", 1, 1, 2, 0, mod_off, len(modinfo), 0, 0, 1, 0),
          struct.pack("<IIQQQQIIQQ", 10, 3, 0, 0, str_off, len(shstrtab), 0, 0, 1, 0)]
    body = ehdr + modinfo + shstrtab
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(body + bytes(shoff - len(body)) + b"".join(sh))


def test_module_order_puts_dependencies_first(tmp_path):
    mods = tmp_path / "modules" / "6.1.0-test" / "kernel" / "drivers"
    fake_module(mods / "virtio" / "virtio_ring.ko", "virtio_ring", [])
    fake_module(mods / "virtio" / "virtio.ko", "virtio", ["virtio_ring"])
    fake_module(mods / "char" / "virtio_console.ko", "virtio_console", ["virtio", "virtio_ring"])
    fake_module(mods / "virtio" / "virtio_pci_modern_dev.ko", "virtio_pci_modern_dev", [])
    fake_module(mods / "virtio" / "virtio_pci.ko", "virtio_pci", ["virtio_ring", "virtio_pci_modern_dev", "virtio"])
    fake_module(mods / "net" / "unrelated.ko", "unrelated", [])
    order = [m.name for m in resolve_modules(tmp_path / "modules", "6.1.0-test")]
    assert order == ["virtio_ring", "virtio", "virtio_console", "virtio_pci_modern_dev", "virtio_pci"]

    # The archive: /init is the probe byte for byte, the console node, mount points, the modules.
    probe_file = tmp_path / "probe"
    probe_file.write_bytes(os.urandom(5000))
    chosen = resolve_modules(tmp_path / "modules", "6.1.0-test")
    archive = build_initramfs(probe_file, chosen, tmp_path / "cache")
    files = parse_newc(gzip.decompress(archive.read_bytes()))
    mode, _, body = files["init"]
    assert body == probe_file.read_bytes() and mode == 0o100755
    assert files["dev/console"][:2] == (0o020600, (5, 1))
    for d in ("proc", "sys", "dev", "tmp", "modules"):
        assert files[d][0] & 0o170000 == 0o040000
    assert files["modules/order"][2].decode().split() == [f"{n}.ko" for n in order]
    for n in order:
        assert files[f"modules/{n}.ko"][2] == next(m.path for m in chosen if m.name == n).read_bytes()
    assert "modules/unrelated.ko" not in files

    # Cached by content: the same input is the same file, untouched; another probe is another file.
    stamp = archive.stat().st_mtime_ns
    assert build_initramfs(probe_file, chosen, tmp_path / "cache") == archive
    assert archive.stat().st_mtime_ns == stamp
    probe_file.write_bytes(b"other")
    assert build_initramfs(probe_file, chosen, tmp_path / "cache") != archive


def test_module_problems_are_input_errors(tmp_path):
    mods = tmp_path / "m"
    fake_module(mods / "virtio_console.ko", "virtio_console", ["virtio"])
    with pytest.raises(InputError, match="depends on virtio, which is not there"):
        resolve_modules(mods, None)
    fake_module(mods / "virtio.ko", "virtio", [], vermagic="5.10.0-other SMP")
    with pytest.raises(InputError, match="built for kernel 5.10.0-other"):
        resolve_modules(mods, "6.1.0-test")
    empty = tmp_path / "empty"
    empty.mkdir()
    # Absent and not known to be a module: taken as built in. Known to be =m: an error now.
    assert resolve_modules(empty, None) == []
    with pytest.raises(InputError, match="CONFIG_VIRTIO_CONSOLE=m"):
        resolve_modules(empty, None, {"CONFIG_VIRTIO_CONSOLE": "m"})


# ---------------------------------------------------------------------------
# Campaign keys


def _env(kernel: str, extra: str = "") -> str:
    return (f'name = "q"\n[environments.g]\ntarget = "qemu"\narch = "x86_64"\nkernel = "{kernel}"\n{extra}\n'
            '[benchmarks.b]\nkind = "os"\n')


def test_campaign_keys(tmp_path):
    (tmp_path / "k").mkdir()
    bz = tmp_path / "k" / "vmlinuz"
    bz.write_bytes(bytes(0x202) + b"HdrS" + bytes(64))
    c = parse_campaign(_env("k/vmlinuz"), "c.toml", tmp_path)
    p = c.environments["g"].params
    assert p.kernel == str(bz) and p.cpus == 1 and p.memory_mb == 512 and p.count == 1 and p.accel == "auto"
    with pytest.raises(CampaignError) as e:
        parse_campaign(_env("k/nope", 'pin_vcpus = [0, 0]\naccel = "hvf"\nhost_priority = 100'),
                       "c.toml", tmp_path)
    text = "\n".join(e.value.issue_lines())
    assert f"kernel image {tmp_path}/k/nope does not exist" in text
    assert 'accel: must be one of "auto", "kvm" or "tcg"' in text
    assert "host_priority: must be a SCHED_FIFO priority from 1 to 99" in text
    with pytest.raises(CampaignError, match="pin_vcpus: names 2 host CPUs; it needs one per vCPU"):
        parse_campaign(_env("k/vmlinuz", "pin_vcpus = [0, 0]"), "c.toml", tmp_path)
    with pytest.raises(CampaignError, match="is an x86_64 kernel, not aarch64"):
        parse_campaign(_env("k/vmlinuz").replace('"x86_64"', '"aarch64"'), "c.toml", tmp_path)


# ---------------------------------------------------------------------------
# Real guests under TCG


def _kernel(arch: str) -> Path:
    image = KERNELS / arch / "vmlinuz"
    if not image.is_file():
        if shutil.which("apt-get") is None:
            pytest.skip("no kernel in kernels/ and no apt-get to fetch one")
        from rtvbench.targets.qemu.kernels import fetch
        try:
            image = fetch(arch, False, KERNELS)
        except RtvbenchError as e:
            pytest.skip(f"cannot fetch a {arch} kernel: {e}")
    return image


def _needs_qemu(arch: str) -> None:
    if shutil.which(f"qemu-system-{arch}") is None:
        pytest.skip(f"qemu-system-{arch} is not installed")


def _target(arch: str, tmp_path: Path, extra: str = "", cross=None) -> QemuTarget:
    _needs_qemu(arch)
    kernel = _kernel(arch)
    c = parse_campaign(f'name = "q"\n[environments.g]\ntarget = "qemu"\narch = "{arch}"\n'
                       f'kernel = "{kernel}"\n{extra}\n[benchmarks.b]\nkind = "os"\n', "q.toml", tmp_path)
    return c.environments["g"]


def _records(target, argv: list[str]) -> tuple[list[dict], object]:
    lines: list[str] = []
    done = target.run(argv, lines.append)
    return [json.loads(line) for line in lines], done


@pytest.fixture(scope="module")
def x86_guest(probe, tmp_path_factory):
    t = _target("x86_64", tmp_path_factory.mktemp("x86"), "hang_timeout_s = 8")
    assert t.deploy_probe() == "/init"
    yield t
    t.close()


@pytest.fixture(scope="module")
def arm_guest(cross_probes, tmp_path_factory):
    t = _target("aarch64", tmp_path_factory.mktemp("arm"))
    assert t.deploy_probe() == "/init"
    yield t
    t.close()


@pytest.fixture(params=["x86_64", "aarch64"])
def guest(request):
    return request.getfixturevalue("x86_guest" if request.param == "x86_64" else "arm_guest")


def test_guest_sysinfo_and_describe(guest):
    d = guest.describe()
    arch = guest.params.arch
    assert d["target"] == "qemu" and d["arch"] == arch and d["accel"] in ("tcg", "kvm")
    assert d["emulated"] == (d["accel"] == "tcg")
    assert d["cpus"] == 1 and d["memory_mb"] == 512 and d["count"] == 1
    assert 0 < d["boot_s"] < 120 and 0 < d["guest_boottime_ns"] / 1e9 < d["boot_s"]
    assert d["qemu"][0].isdigit()
    recs, done = _records(guest, ["/init", "sysinfo"])
    assert done.returncode == 0, done.stderr
    info = next(r for r in recs if r["type"] == "sysinfo")
    assert info["machine"] == arch
    assert info["kernel_release"] == kernel_release(Path(guest.params.kernel)) == d["kernel_release"]
    hv = info["hypervisor"]
    if arch == "x86_64":
        assert hv["cpuid_bit"] is True or hv["dmi_sys_vendor"] == "QEMU"
    else:
        assert "virt" in (hv["dt_model"] or "")


def test_guest_latency_counts_every_activation(guest):
    recs, done = _records(guest, ["/init", "latency", "--duration-s", "0.5", "--interval-us", "1000"])
    assert done.returncode == 0, done.stderr
    res = next(r for r in recs if r["type"] == "result" and r["cpu"] == "all")
    # 0.5 s at 1 ms: 500 activations, those an emulated guest overran counted as missed.
    assert 450 <= res["count"] + res["missed"] <= 550
    assert res["count"] >= 50 and 0 < res["min_ns"] <= res["p50_ns"] <= res["max_ns"]
    assert recs[-1] == {**recs[-1], "type": "end", "status": "ok"}


def test_guest_null_syscall(guest):
    recs, done = _records(guest, ["/init", "os", "--tests", "null", "--quick"])
    assert done.returncode == 0, done.stderr
    res = [r for r in recs if r["type"] == "result"]
    assert [r["test"] for r in res] == ["null"]
    # A null syscall takes well under 100 us even emulated, and more than nothing.
    assert 0 < res[0]["min_ns"] <= res[0]["median_ns"] < 100_000


def test_guest_reads_proc_stat(guest):
    counters = parse_proc_stat(guest.read_file("/proc/stat"))
    assert counters
    with pytest.raises(TargetError, match="cannot read /nonexistent"):
        guest.read_file("/nonexistent")


def test_killed_qemu_is_lost_with_the_console_and_reboots(x86_guest):
    g = x86_guest._guests[0]
    boots = g.boots

    def on_line(line: str) -> None:
        os.kill(g.proc.pid, signal.SIGKILL)
    with pytest.raises(TargetLost) as e:
        x86_guest.run(["/init", "latency", "--duration-s", "30"], on_line)
    assert "QEMU exited" in str(e.value) or "channel closed" in str(e.value)
    log = e.value.log.splitlines()
    assert "Linux version 6." in log[0] and "Run /init as init process" in e.value.log
    assert "rtvb-probe init: serving on" in e.value.log and 100 < len(log) <= 230
    assert not g.up and g.proc is None
    recs, done = _records(x86_guest, ["/init", "sysinfo"])     # booted afresh
    assert done.returncode == 0 and g.boots == boots + 1 and g.up


def test_stopped_qemu_is_a_hang(x86_guest):
    g = x86_guest._guests[0]
    started = []

    def on_line(line: str) -> None:
        if not started:
            started.append(time.monotonic())
            os.kill(g.proc.pid, signal.SIGSTOP)
    with pytest.raises(TargetLost, match="no heartbeat for 8 s"):
        x86_guest.run(["/init", "latency", "--duration-s", "60"], on_line)
    assert 7 < time.monotonic() - started[0] < 20
    recs, done = _records(x86_guest, ["/init", "sysinfo"])
    assert done.returncode == 0


def test_a_paused_guest_takes_no_cpu_and_its_clock_stands_still(x86_guest):
    g = x86_guest._guests[0]
    x86_guest.resume()

    def cpu_s() -> float:
        fields = Path(f"/proc/{g.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")     # utime + stime
    up_before = float(x86_guest.read_file("/proc/uptime").split()[0])
    x86_guest.pause()
    x86_guest.pause()                                   # idempotent
    used = cpu_s()
    time.sleep(2.0)
    used = cpu_s() - used
    x86_guest.resume()
    up_after = float(x86_guest.read_file("/proc/uptime").split()[0])
    assert used < 0.1, used                             # QEMU's vCPU threads do not run
    # 2 s passed on the host; the guest saw only the time around the pause.
    assert 0 <= up_after - up_before < 1.5, (up_before, up_after)
    recs, done = _records(x86_guest, ["/init", "sysinfo"])      # no false hang after the silence
    assert done.returncode == 0 and not g.paused


def test_remove_dir_boots_afresh(x86_guest):
    g = x86_guest._guests[0]
    before = x86_guest.read_file("/proc/sys/kernel/random/boot_id")
    x86_guest.remove_dir("/tmp/rtvb-load-xyz")
    after = x86_guest.read_file("/proc/sys/kernel/random/boot_id")
    assert before != after and not g.fresh_boot_wanted


def test_two_guests_pinned_with_neighbour_load(probe, tmp_path):
    t = _target("x86_64", tmp_path, "count = 2\npin_vcpus = [0, 1]")
    try:
        started = time.monotonic()
        t.deploy_probe()
        both = time.monotonic() - started
        guests = t._guests
        assert len(t.neighbours) == 1 and all(g.up for g in guests)
        # Booted concurrently: the pair took less than the two boots one after the other.
        assert both < guests[0].boot_s + guests[1].boot_s
        for g, cpu in zip(guests, (0, 1)):
            assert [os.sched_getaffinity(tid) for tid in g.vcpu_threads] == [{cpu}]
        n = t.neighbours[0]
        assert n.deploy_probe() == "/init"
        ids = {t.read_file("/proc/sys/kernel/random/boot_id"), n.read_file("/proc/sys/kernel/random/boot_id")}
        assert len(ids) == 2                                    # two distinct guests
        assert n.describe()["guest"] == 2 and t.describe()["guest"] == 1
        load = []
        bg = n.start_background(["/init", "load", "--kind", "cpu", "--percent", "50"],
                                lambda line: load.append(json.loads(line)))
        recs, done = _records(t, ["/init", "latency", "--duration-s", "0.5", "--interval-us", "1000"])
        assert bg.poll() is None
        bg.stop()
        assert done.returncode == 0 and load[0]["type"] == "meta" and load[-1]["type"] == "end"
    finally:
        t.close()
    assert all(g.proc is None for g in guests)


@pytest.mark.skipif(os.geteuid() != 0, reason="host_priority needs root")
def test_vcpu_thread_pinned_and_real_time(probe, tmp_path):
    cpu = max(os.sched_getaffinity(0))
    t = _target("x86_64", tmp_path, f"pin_vcpus = [{cpu}]\nhost_priority = 1")
    try:
        t.deploy_probe()
        tid, = t._guests[0].vcpu_threads
        assert os.sched_getaffinity(tid) == {cpu}
        assert os.sched_getscheduler(tid) == os.SCHED_FIFO and os.sched_getparam(tid).sched_priority == 1
        assert t.describe()["pin_vcpus"] == [cpu] and t.describe()["host_priority"] == 1
        recs, done = _records(t, ["/init", "latency", "--duration-s", "0.5", "--interval-us", "1000"])
        assert done.returncode == 0 and recs[-1]["status"] == "ok"
    finally:
        t.close()


def test_missing_modules_are_caught_before_boot(probe, tmp_path):
    (tmp_path / "none").mkdir()
    t = _target("x86_64", tmp_path, f'modules = "{tmp_path}/none"')
    with pytest.raises(InputError, match="builds virtio_console as a module"):
        t.deploy_probe()


def test_boot_failure_names_the_cause(probe, tmp_path):
    """A guest whose kernel finds no init panics and never says `ready`: a TargetError that
    quotes the console, and no QEMU left behind."""
    t = _target("x86_64", tmp_path, 'cmdline = "rdinit=/no-init"')
    with pytest.raises(TargetError, match="did not boot: the guest stopped before it was ready") as e:
        t.deploy_probe()
    assert "Kernel panic - not syncing" in str(e.value)
    assert t._guests[0].proc is None


@pytest.mark.functional
@pytest.mark.timeout(1200)          # a hang guard: the guest boots under TCG
def test_native_vs_guest_campaign(probe, tmp_path):
    _needs_qemu("x86_64")
    kernel = _kernel("x86_64")
    (tmp_path / "c.toml").write_text(f"""
name = "native-vs-guest"
repetitions = 3
seed = 1
[environments.native]
target = "local"
[environments.guest]
target = "qemu"
arch = "x86_64"
kernel = "{os.path.relpath(kernel, tmp_path)}"
{GUARDS}
[benchmarks.wakeup]
kind = "latency"
interval_us = 1000
duration_s = 0.5
""")
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=cli_env(probe), timeout=900)
    assert r.returncode == 0, r.stderr
    assert "6 of 6 measurements ok" in r.stdout
    run = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), 1)
    assert set(run.fingerprints) == {"native", "guest"}
    assert Counter(m.environment for m in run.measurements) == {"native": 3, "guest": 3}
    for m in run.measurements:
        assert m.status == "ok", m.error
        per_cpu = [r for r in m.results if r["cpu"] != "all"]     # every CPU of the environment
        assert per_cpu and all(450 <= r["count"] + r["missed"] <= 550 for r in per_cpu)
        assert len(per_cpu) == (1 if m.environment == "guest" else len(os.sched_getaffinity(0)))
        assert (m.command[0] == "/init") == (m.environment == "guest")
    described = run.targets["guest"]
    assert described["target"] == "qemu" and described["accel"] in ("tcg", "kvm") and described["boot_s"] > 0
    assert run.fingerprints["guest"]["machine"] == "x86_64"


# Not functional: the kill must land within the 4 s the probe measures, and nothing of the test's can
# hold a guest's probe for longer, so a stalled machine could make it miss (see below).
@pytest.mark.timeout(1200)          # a hang guard: the guest boots twice under TCG
def test_a_guest_killed_mid_campaign_is_recorded_and_the_campaign_goes_on(probe, tmp_path):
    """SIGKILL of the guest's QEMU while it measures: that attempt is stored as failed with the
    guest's console, the guest is booted afresh, the measurement retried, and the run finishes."""
    import uuid

    from helpers.stored_so_far import stored_records
    from host_helpers import processes_with, start_cli, wait_for
    _needs_qemu("x86_64")
    marker = f"rtvbtest={uuid.uuid4().hex}"     # on QEMU's command line (-append): finds our guest
    kernel = _kernel("x86_64")
    (tmp_path / "c.toml").write_text(f"""
name = "crash"
repetitions = 2
[environments.guest]
target = "qemu"
arch = "x86_64"
kernel = "{os.path.relpath(kernel, tmp_path)}"
cmdline = "{marker}"
{GUARDS}
[benchmarks.wakeup]
kind = "latency"
interval_us = 1000
duration_s = 4
window_s = 0.5
""")
    cli = start_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=cli_env(probe))
    try:
        # The kill must land while the probe runs: after it, the runner would find the guest gone
        # only at its next command and boot it afresh without a lost attempt. The guest runs only
        # the probe, so nothing of the test's can hold the measurement; instead the kill follows the
        # probe's first record (its `meta`, printed as it starts), which leaves it the whole
        # duration_s (4 s, far more than storing a record and seeing it take on a busy machine).
        # The wait itself is a hang guard: it spans the CLI's start and a TCG boot.
        wait_for(lambda: stored_records(tmp_path / "s.db") > 0, timeout=600,
                 what="the first record of the guest's measurement")
        [qemu] = processes_with(marker)
        os.kill(qemu, signal.SIGKILL)
        out, err = cli.communicate(timeout=600)
    finally:
        if cli.poll() is None:
            cli.kill()
        for pid in processes_with(marker):
            os.kill(pid, signal.SIGKILL)
    assert cli.returncode == 0, err
    assert "2 of 2 measurements ok" in out
    run = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), 1)
    assert run.status == "finished"
    [lost] = run.failed_attempts
    # Whichever the target notices first: QEMU's exit status, or the end of its data channel.
    assert lost.attempt == 1 and "was lost during" in lost.error
    assert "QEMU exited" in lost.error or "channel closed" in lost.error, lost.error
    assert "Linux version 6." in lost.target_log and "rtvb-probe init: serving on" in lost.target_log
    assert sorted(m.attempt for m in run.measurements) == [1, 2]
    assert all(m.status == "ok" and m.result() is not None for m in run.measurements)
    assert not processes_with(marker)           # the fresh guest was powered off at the end


def test_guest_trace_capture_explains_its_breaches(guest):
    """Debian's guest kernels have tracefs: the probe mounts it, traces in its own instance and saves
    the breaches of an emulated CPU, each explained (an emulated guest's wake-ups are late by far more
    than 300 us, so breaches come)."""
    recs, done = _records(guest, ["/init", "latency", "--duration-s", "1", "--interval-us", "1000",
                                  "--trace-threshold-us", "300", "--trace-breaches", "2"])
    assert done.returncode == 0, done.stderr
    assert recs[0]["privileges"]["trace"] is True, [r for r in recs if r["type"] == "warning"]
    assert "sched:sched_switch" in recs[0]["privileges"]["trace_events"]
    traces = [r for r in recs if r["type"] == "trace"]
    res = next(r for r in recs if r["type"] == "result" and r["cpu"] == "all")
    assert 1 <= len(traces) == res["breaches_traced"] <= 2
    for rec in traces:
        spike = attribute(rec)
        assert spike is not None and spike.latency_ns > 300_000
        assert any("rtvb-probe breach" in line for line in rec["cpus"][0]["lines"])
        assert spike.cause != "unknown", spike.explanation
        assert spike.excerpt and spike.explanation.startswith("The wake-up was")


def test_a_pvm_host_kvm_is_not_used_for_ordinary_kernels(tmp_path, monkeypatch):
    """PVM (a paravirtual KVM) passes the real-mode firmware check but stops an ordinary kernel at
    its first 64-bit steps with QEMU paused: the module's presence alone decides."""
    from rtvbench.targets.qemu import kvm
    monkeypatch.setattr(kvm, "PVM_MODULE", tmp_path)          # exists: this "host" runs PVM
    monkeypatch.setattr(kvm, "_cache", {})
    monkeypatch.setattr(kvm.os.path, "exists", lambda p: True)
    assert "PVM" in kvm.kvm_problem("qemu-system-x86_64", "x86_64", ["-M", "q35"])
    monkeypatch.setattr(kvm, "PVM_MODULE", tmp_path / "absent")
    monkeypatch.setattr(kvm, "_cache", {})
    monkeypatch.setattr(kvm, "_try", lambda *a: None)
    monkeypatch.setattr(kvm.os, "access", lambda *a: True)
    assert kvm.kvm_problem("qemu-system-x86_64", "x86_64", ["-M", "q35"]) is None


def test_guest_thermal_sampler(x86_guest):
    """The runner's thermal sampler runs in a guest as on a board: through the agent, in the background,
    its first sample once wait_first() returns (the runner reads /proc between the two) and its last at stop()."""
    sampler = ThermalSampler(x86_guest, "/init")
    sampler.start()
    sampler.wait_first()
    assert [s["seq"] for s in sampler.samples] == [0]
    time.sleep(0.7)                       # one sample at 0.5 s
    samples = sampler.stop()
    assert [s["seq"] for s in samples] == list(range(len(samples))) and len(samples) >= 3
    assert set(samples[0]) >= {"zones", "temp_mC", "freq_khz", "throttle", "cooling"}
    assert sampler.stored()["interval_ms"] == 500
