"""One QEMU guest's life: boot it, watch it, lose it, power it off (docs/targets/qemu.md).

The host listens on two unix sockets before QEMU starts and QEMU connects to both as a client
while it initialises, so there is no window in which the guest could talk to nobody: the data
channel (a virtio-serial port the probe serves as /init) and QMP (vCPU thread ids for pinning,
`quit` when a poweroff is not answered). The serial console goes to a file: it is the log a
lost guest is reported with.

Processes are started from the caller's thread only: the kernel kills them when the thread
that started them ends (PR_SET_PDEATHSIG), which is what we want for the main thread and
never for a helper thread.
"""

from __future__ import annotations

import atexit
import bz2
import ctypes
import functools
import hashlib
import json
import lzma
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from rtvbench import run_files
from rtvbench.errors import TargetError, TargetLost
from rtvbench.targets.local import _die_with_parent, _libc
from rtvbench.targets.qemu.channel import AgentChannel, ChannelClosed
from rtvbench.targets.qemu.initramfs import cache_dir as initramfs_cache_dir

CONSOLE = {"x86_64": "ttyS0", "aarch64": "ttyAMA0"}
PORT_NAME = "org.rtvbench.0"
LOG_LINES = 200
CONNECT_TIMEOUT_S = 15.0        # QEMU connects to our sockets while it initialises
POWEROFF_TIMEOUT_S = 15.0
QMP_TIMEOUT_S = 10.0
CLONE_NEWNET = 0x40000000

_live: set["QemuGuest"] = set()


@atexit.register
def _kill_all() -> None:
    # An exit path that skips close() (an unexpected exception) still leaves no guest running.
    for guest in list(_live):
        guest.kill()


@dataclass
class GuestConfig:
    arch: str
    qemu: str                   # the qemu-system-* binary
    kernel: Path                # what -kernel gets (an extracted PVH vmlinux on x86 when possible)
    initrd: Path
    cmdline: str
    accel: str                  # "kvm" | "tcg"
    cpus: int
    memory_mb: int
    boot_timeout_s: float
    hang_timeout_s: float
    pin: list[int] | None = None
    host_priority: int | None = None
    extra: list[str] = field(default_factory=list)
    netns: str | None = None    # the network namespace QEMU runs in (its tap device is there): netns.py


def _enter_and_die_with_parent(netns: int) -> None:
    """preexec_fn of QEMU: enter the guests' network namespace (so that QEMU finds its tap device
    there and nowhere else), then as for every process we start, die with the thread that started it."""
    if netns >= 0 and _libc.setns(netns, CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "setns")
    _die_with_parent()


def machine_args(arch: str, accel: str) -> list[str]:
    """-M and -cpu. q35 boots about twice as fast as pc under TCG (no ISA probing); -cpu max is
    the fastest x86 model under TCG; on aarch64 a Cortex-A72, a common core of embedded Arm SoCs."""
    if arch == "x86_64":
        return ["-M", "q35", "-cpu", "host" if accel == "kvm" else "max"]
    return ["-M", "virt", "-cpu", "host" if accel == "kvm" else "cortex-a72"]


def qemu_argv(cfg: GuestConfig, data_sock: Path, qmp_sock: Path, console: Path) -> list[str]:
    return [
        cfg.qemu, "-accel", cfg.accel, *machine_args(cfg.arch, cfg.accel),
        "-smp", str(cfg.cpus), "-m", str(cfg.memory_mb),
        "-nodefaults", "-nographic", "-no-reboot",
        "-chardev", f"file,id=console,path={console}", "-serial", "chardev:console",
        "-chardev", f"socket,id=rtvb,path={data_sock}",
        "-device", "virtio-serial-pci,id=rtvbser",
        "-device", f"virtserialport,bus=rtvbser.0,chardev=rtvb,name={PORT_NAME}",
        "-chardev", f"socket,id=qmp,path={qmp_sock}", "-mon", "chardev=qmp,mode=control",
        "-kernel", str(cfg.kernel), "-initrd", str(cfg.initrd), "-append", cfg.cmdline,
        *cfg.extra,
    ]


# ---------------------------------------------------------------------------
# x86: boot the kernel's ELF through PVH instead of its bzImage


def _elf_has_pvh_note(elf: bytes) -> bool:
    """Whether an x86-64 vmlinux carries XEN_ELFNOTE_PHYS32_ENTRY, which QEMU needs to boot
    it directly (the PVH entry point)."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        return False
    phoff, = struct.unpack_from("<Q", elf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
    for i in range(phnum):
        ptype, = struct.unpack_from("<I", elf, phoff + i * phentsize)
        if ptype != 4:                                   # PT_NOTE
            continue
        off, = struct.unpack_from("<Q", elf, phoff + i * phentsize + 8)
        size, = struct.unpack_from("<Q", elf, phoff + i * phentsize + 32)
        pos, end = off, off + size
        while pos + 12 <= end:
            namesz, descsz, ntype = struct.unpack_from("<III", elf, pos)
            name = elf[pos + 12:pos + 12 + namesz].rstrip(b"\0")
            if name == b"Xen" and ntype == 18:
                return True
            pos += 12 + (namesz + 3) // 4 * 4 + (descsz + 3) // 4 * 4
    return False


def _bzimage_payload(data: bytes) -> bytes | None:
    """The compressed vmlinux inside an x86 bzImage, decompressed; None for formats the
    standard library cannot read (zstd, lz4, lzo)."""
    if len(data) < 0x250 or data[0x202:0x206] != b"HdrS":
        return None
    setup_sects = data[0x1F1] or 4
    offset, length = struct.unpack_from("<II", data, 0x248)
    start = (setup_sects + 1) * 512 + offset
    payload = data[start:start + length]
    try:
        if payload[:2] == b"\x1f\x8b":
            return zlib.decompressobj(wbits=31).decompress(payload)   # ignores the size trailer
        if payload[:6] == b"\xfd7zXZ\x00":
            return lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(payload)
        if payload[:3] == b"BZh":
            return bz2.BZ2Decompressor().decompress(payload)
        if payload[:3] == b"\x5d\x00\x00":
            return lzma.LZMADecompressor(format=lzma.FORMAT_ALONE).decompress(payload)
    except (lzma.LZMAError, OSError, zlib.error, EOFError):
        return None
    return None


def pvh_kernel(image: Path) -> Path | None:
    """An ELF vmlinux extracted from an x86 bzImage, cached, when QEMU can boot it with PVH.

    Under TCG the bzImage's own decompressor (xz for Debian) runs emulated and takes longer
    than the rest of the boot; decompressing once on the host and starting the kernel at its
    PVH entry halves the boot time. None: boot the bzImage as it is."""
    data = image.read_bytes()
    digest = hashlib.sha256(data).hexdigest()[:32]
    cache = initramfs_cache_dir().parent / "vmlinux"
    out = cache / f"{digest}.elf"
    nope = cache / f"{digest}.none"
    if out.is_file():
        return out
    if nope.exists():
        return None
    elf = _bzimage_payload(data)
    cache.mkdir(parents=True, exist_ok=True)
    if elf is None or not _elf_has_pvh_note(elf):
        nope.touch()
        return None
    fd, tmp = tempfile.mkstemp(dir=cache, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(elf)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out


# ---------------------------------------------------------------------------
# QMP


class Qmp:
    """A minimal QMP client: requests in order, events skipped."""

    def __init__(self, sock: socket.socket) -> None:
        sock.settimeout(QMP_TIMEOUT_S)
        self.sock = sock
        self.f = sock.makefile("rwb")
        greeting = self._read()
        if "QMP" not in greeting:
            raise OSError(f"unexpected QMP greeting {greeting!r}")
        self.execute("qmp_capabilities")

    def _read(self) -> dict:
        while True:
            line = self.f.readline()
            if not line:
                raise OSError("QMP connection closed")
            msg = json.loads(line)
            if "event" not in msg:
                return msg

    def execute(self, command: str, **arguments) -> object:
        req = {"execute": command, **({"arguments": arguments} if arguments else {})}
        self.f.write(json.dumps(req).encode() + b"\n")
        self.f.flush()
        reply = self._read()
        if "error" in reply:
            raise OSError(f"QMP {command}: {reply['error'].get('desc', reply['error'])}")
        return reply.get("return")

    def close(self) -> None:
        for c in (self.f, self.sock):
            try:
                c.close()
            except OSError:
                pass


# ---------------------------------------------------------------------------


def _listen(path: Path) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    s.listen(1)
    return s


def _tail_lines(path: Path, n: int, limit: int = 1 << 18) -> list[str]:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return []
    lines = [line.rstrip("\r") for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1].strip():
        lines.pop()
    return lines[-n:]


def _banner(console: Path) -> str | None:
    """The kernel's `Linux version ...` line, from the start of the console log."""
    try:
        with open(console, "rb") as f:
            head = f.read(1 << 14).decode("utf-8", "replace")
    except OSError:
        return None
    for line in head.replace("\r\n", "\n").split("\n"):
        if "Linux version" in line:
            return line[line.find("["):] if "[" in line else line
    return None


#: the kernel's console line right before it executes /init, with printk's timestamp
_RUN_INIT = re.compile(r"\[\s*([0-9]+\.[0-9]+)\] Run /init as init process")


class QemuGuest:
    """One VM. `label` names it in messages ("environment guest", "neighbour 2 of ...")."""

    def __init__(self, cfg: GuestConfig, label: str) -> None:
        self.cfg = cfg
        self.label = label
        self.proc: subprocess.Popen | None = None
        self.channel: AgentChannel | None = None
        self.qmp: Qmp | None = None
        self.tmp: Path | None = None
        self.up = False
        self.started_at = 0.0
        self.boot_s: float | None = None
        self.boottime_ns: int | None = None
        self.init_ns: int | None = None
        self.version: str | None = None
        self.vcpu_threads: list[int] = []
        self.boots = 0
        self.fresh_boot_wanted = False     # remove_dir: empty the guest's /tmp by a reboot
        self.paused = False                # vCPUs stopped (QMP stop) while others are measured
        self.lock = threading.Lock()         # commands vs. loss handling from a load's thread
        self._sockets: list[socket.socket] = []

    # -- boot ---------------------------------------------------------------

    def launch(self) -> None:
        """Start QEMU and connect; the guest then boots on its own (await_ready)."""
        self.kill()
        self.tmp = run_files.make_dir("rtvb-qemu-")      # the next command sweeps it if we are killed
        data_l, qmp_l = _listen(self.tmp / "data.sock"), _listen(self.tmp / "qmp.sock")
        self._sockets = [data_l, qmp_l]
        argv = qemu_argv(self.cfg, self.tmp / "data.sock", self.tmp / "qmp.sock", self.console_path)
        self.boots += 1
        self.started_at = time.monotonic()
        netns = self._open_netns()
        with open(self.tmp / "qemu.log", "wb") as err:
            try:
                self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=err,
                                             stderr=subprocess.STDOUT, start_new_session=True,
                                             preexec_fn=functools.partial(_enter_and_die_with_parent, netns))
            except OSError as e:
                self.kill()
                raise TargetError(f"cannot start {self.cfg.qemu} for {self.label} ({e.strerror}); "
                                  "install QEMU (qemu-system-x86 / qemu-system-arm).") from None
            except subprocess.SubprocessError:
                self.kill()
                raise TargetError(f"cannot start QEMU for {self.label} in network namespace {self.cfg.netns} "
                                  "(setns failed); rtvbench needs root for network = true.") from None
            finally:
                if netns >= 0:
                    os.close(netns)
        _live.add(self)
        try:
            data = self._accept(data_l)
            self.channel = AgentChannel(data, f"qemu-{self.proc.pid}")
            self.qmp = Qmp(self._accept(qmp_l))
            self._tune()
        except OSError as e:
            raise self._boot_failure(f"QEMU did not connect its sockets ({e})") from None

    def _open_netns(self) -> int:
        """A descriptor of the namespace QEMU is to run in, or -1 for this process's own."""
        if self.cfg.netns is None:
            return -1
        try:
            return os.open(f"/run/netns/{self.cfg.netns}", os.O_RDONLY | os.O_CLOEXEC)
        except OSError as e:
            self.kill()
            raise TargetError(f"the guests' network namespace {self.cfg.netns} is gone ({e.strerror}); "
                              f"{self.label} cannot boot with its network.") from None

    def _accept(self, listener: socket.socket) -> socket.socket:
        deadline = time.monotonic() + CONNECT_TIMEOUT_S
        listener.settimeout(0.1)
        while True:
            try:
                conn, _ = listener.accept()
                conn.settimeout(None)
                return conn
            except socket.timeout:
                if self.proc.poll() is not None:
                    raise OSError("QEMU exited") from None
                if time.monotonic() > deadline:
                    raise OSError(f"no connection within {CONNECT_TIMEOUT_S:g} s") from None

    def _tune(self) -> None:
        """Pin each vCPU thread to its host CPU and give it the real-time priority asked for."""
        cpus = self.qmp.execute("query-cpus-fast")
        self.vcpu_threads = [c["thread-id"] for c in sorted(cpus, key=lambda c: c["cpu-index"])]
        if self.cfg.pin is None and self.cfg.host_priority is None:
            return
        if len(set(self.vcpu_threads)) != len(self.vcpu_threads):
            self.kill()
            raise TargetError(f"QEMU runs the vCPUs of {self.label} in one thread (single-threaded TCG), "
                              "so they cannot be pinned or prioritised one by one; drop pin_vcpus and "
                              "host_priority or use one vCPU.")
        try:
            for i, tid in enumerate(self.vcpu_threads):
                if self.cfg.pin is not None:
                    os.sched_setaffinity(tid, {self.cfg.pin[i]})
                if self.cfg.host_priority is not None:
                    os.sched_setscheduler(tid, os.SCHED_FIFO, os.sched_param(self.cfg.host_priority))
        except PermissionError:
            self.kill()
            raise TargetError(f"host_priority of {self.label} needs root (CAP_SYS_NICE) to make the vCPU "
                              "threads SCHED_FIFO; run rtvbench as root or drop host_priority.") from None
        except OSError as e:
            self.kill()
            raise TargetError(f"cannot pin the vCPUs of {self.label} to host CPUs {self.cfg.pin} "
                              f"({e.strerror}); fix pin_vcpus.") from None

    def await_ready(self, deadline: float | None = None) -> bool:
        """Wait (up to deadline) for the guest's `ready`; True once it is up. Raises TargetError
        when it will not come."""
        deadline = deadline or self.started_at + self.cfg.boot_timeout_s
        while not self.channel.wait_ready(0.1):
            if self.proc.poll() is not None or self.channel.closed.is_set():
                raise self._boot_failure("the guest stopped before it was ready")
            if time.monotonic() > self.started_at + self.cfg.boot_timeout_s:
                raise self._boot_failure(f"the guest was not ready within boot_timeout_s = "
                                         f"{self.cfg.boot_timeout_s:g} s")
            if time.monotonic() > deadline:
                return False
        self.boot_s = (self.channel.ready_at or time.monotonic()) - self.started_at
        self.boottime_ns = self.channel.boottime_ns
        self.init_ns = self.channel.init_ns
        self.version = self.channel.version
        self.up = True
        return True

    def boot(self) -> None:
        self.launch()
        self.await_ready()

    def boot_phases(self) -> dict[str, float] | None:
        """The last boot in phases, ns: QEMU started -> the guest kernel's clock started (QEMU, the
        firmware, loading and decompressing the kernel) -> /init started (the kernel) -> the probe
        said `ready` (init: mounts, modules, the channel). The guest's CLOCK_BOOTTIME starts when the
        kernel's timekeeping does, a little after the kernel's first instruction: that moment is
        counted in the first phase. None without the guest's clocks (a probe before they were sent)."""
        if self.boot_s is None or self.boottime_ns is None or self.init_ns is None:
            return None
        total = self.boot_s * 1e9
        phases = {"total_ns": total, "to_kernel_ns": max(0.0, total - self.boottime_ns),
                  "kernel_ns": float(self.init_ns), "init_ns": float(self.boottime_ns - self.init_ns)}
        # The kernel's own account of the same instant, as a check: its console line before it runs
        # /init, stamped by printk's clock (which starts with the kernel too).
        try:
            found = _RUN_INIT.search(self.console_path.read_text(errors="replace"))
        except OSError:
            found = None
        if found:
            phases["console_init_ns"] = float(found.group(1)) * 1e9
        return phases

    def _boot_failure(self, why: str) -> TargetError:
        lines = [line for line in self.log_lines() if line.strip()]
        # A panic ends in a stack trace and QEMU's own complaint comes last: quote the lines
        # that say what happened rather than the last three.
        telling = [line for line in lines if any(k in line for k in ("Kernel panic", "rtvb-probe", "qemu:"))]
        last = " / ".join((telling or lines)[-3:]) or "no console output"
        self.kill()
        return TargetError(f"{self.label} did not boot: {why} (last output: {last}); check the kernel, "
                           f"its modules, or run {self.cfg.qemu} by hand with the command line in "
                           "docs/targets/qemu.md.")

    # -- health -------------------------------------------------------------

    @property
    def console_path(self) -> Path:
        return (self.tmp or Path("/nonexistent")) / "console.log"

    def log_lines(self) -> list[str]:
        """The end of the serial console, then what QEMU itself printed."""
        if self.tmp is None:
            return []
        lines = _tail_lines(self.console_path, LOG_LINES)
        banner = _banner(self.console_path)
        if banner and banner not in lines:
            # Which kernel it was, even when the tail no longer reaches back to its start.
            lines = [banner, "[...]"] + lines
        lines += [f"qemu: {line}" for line in _tail_lines(self.tmp / "qemu.log", 20)]
        return lines

    def problem(self, hang: bool = True) -> str | None:
        """Why the guest cannot serve commands now, or None."""
        if self.proc is None or self.channel is None:
            return "it is not running"
        status = self.proc.poll()
        if status is not None:
            return f"QEMU exited with status {status}"
        if self.channel.closed.is_set():
            return f"its data channel closed ({self.channel.close_reason})"
        if hang and self.channel.silence_s() > self.cfg.hang_timeout_s:
            return (f"it sent no heartbeat for {self.cfg.hang_timeout_s:g} s (hang_timeout_s): "
                    "the guest or QEMU hangs")
        return None

    def lost(self, during: str, why: str | None = None) -> TargetLost:
        """Kill what is left of the guest and describe its loss; the next command reboots it."""
        why = why or self.problem() or "it stopped answering"
        if self.proc is not None:
            time.sleep(0.2)     # let QEMU's last console bytes reach the file if it is still alive
        log = "\n".join(self.log_lines())
        self.kill()
        return TargetLost(f"{self.label} was lost during {during}: {why}; it will be booted afresh "
                          "for the next command.", log)

    # -- pausing ------------------------------------------------------------

    def pause(self) -> None:
        """Stop the vCPUs (QMP `stop`): a paused guest takes no host CPU and its clocks stand still.
        A guest that is down or whose QMP fails is left alone: the next command finds out why."""
        if self.up and not self.paused and self.qmp is not None and self.proc.poll() is None:
            try:
                self.qmp.execute("stop")
                self.paused = True
            except OSError:
                pass

    def resume(self) -> None:
        if self.paused and self.qmp is not None and self.proc is not None and self.proc.poll() is None:
            try:
                self.qmp.execute("cont")
            except OSError:
                pass
            # The silence while paused was ours, not a hang: the heartbeat clock starts again.
            self.channel.last_line = time.monotonic()
        self.paused = False

    # -- ending ---------------------------------------------------------------

    def poweroff(self) -> None:
        """Ask the guest to power off, wait for QEMU, then make sure it is gone."""
        self.resume()                   # a paused guest cannot hear the request
        if self.proc is not None and self.proc.poll() is None:
            try:
                if self.channel is not None and self.up:
                    self.channel.poweroff()
                self.proc.wait(POWEROFF_TIMEOUT_S)
            except (ChannelClosed, subprocess.TimeoutExpired):
                try:
                    if self.qmp is not None:
                        self.qmp.execute("quit")
                    self.proc.wait(3)
                except (OSError, ValueError, subprocess.TimeoutExpired):
                    pass
        self.kill()

    def kill(self) -> None:
        """Free everything at once: QEMU (SIGKILL, even if stopped), sockets, temporary files."""
        self.up = False
        self.paused = False
        if self.proc is not None:
            if self.proc.poll() is None:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.proc.wait()
            self.proc = None
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        if self.qmp is not None:
            self.qmp.close()
            self.qmp = None
        for s in self._sockets:
            s.close()
        self._sockets = []
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None
        _live.discard(self)
