"""The `qemu` target: rtvbench boots its own guests, with the probe as their /init.

No disk image, no shell, no network: a kernel image, an initramfs rtvbench writes (the probe
and the virtio modules, initramfs.py), and a virtio-serial channel over which the probe
serves commands (the agent protocol, channel.py). The guest boots lazily in deploy_probe;
a guest that crashes, hangs or is killed raises TargetLost with its console log and is booted
afresh by the next command. `count = N` boots N identical guests at once: the first one is
measured, the others are `neighbours` (Targets of their own) for loads. docs/targets/qemu.md.
"""

from __future__ import annotations

import collections
import functools
import os
import platform
import re
import shutil
import subprocess
import threading
import time
from abc import abstractmethod
from pathlib import Path
from typing import Any, Callable, Literal, Optional

from pydantic import ValidationInfo, field_validator, model_validator

from rtvbench.probe import binary as probe_mod
from rtvbench.errors import InputError, TargetError, TargetLost
from rtvbench.targets.qemu import netns
from rtvbench.targets.qemu.initramfs import (NET_MODULES, WANTED_MODULES, build_initramfs, kernel_config_for,
                                             kernel_release, resolve_modules)
from rtvbench.cpulist import MAX_CPUS
from rtvbench.params import Name, StrictModel, WaitS, int_range
from rtvbench.targets import shm as shm_regions
from rtvbench.targets.base import Background, Completed, Deadline, Target, Watch, drain_or_stop
from rtvbench.targets.capabilities import HostCost, OwnedKernel, Pausing, PowerCycling
from rtvbench.targets.qemu.channel import ChannelClosed, Command
from rtvbench.targets.qemu.guest import (CONSOLE, GuestConfig, QemuGuest, machine_args,
                                         pvh_kernel)
from rtvbench.targets.qemu.host_usage import sample as sample_host_usage
from rtvbench.targets.qemu.image import image_arch, image_path, keys_problem
from rtvbench.procstat import parse_meminfo
from rtvbench.targets.qemu.kvm import kvm_problem

PROBE_PATH = "/init"                # where the probe is inside the guest
QEMU_BINARY = {"x86_64": "qemu-system-x86_64", "aarch64": "qemu-system-aarch64", "riscv64": "qemu-system-riscv64"}
QEMU_PACKAGE = {"x86_64": "qemu-system-x86", "aarch64": "qemu-system-arm", "riscv64": "qemu-system-misc"}
ELF_MACHINE = {"x86_64": 62, "aarch64": 183}
LINUX_ARCHES = tuple(ELF_MACHINE)
HOST_ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}
#: Under TCG everything runs emulated on a machine that may be busy: a boot measured at 4-8 s
#: on a loaded 2-CPU host must not be declared failed, and a heartbeat can be late by seconds.
BOOT_TIMEOUT_S = {"tcg": 120.0, "kvm": 30.0}
HANG_TIMEOUT_S = {"tcg": 30.0, "kvm": 10.0}
#: how many times slower than the host an emulated guest may run a workload, for the watchdog
SLOWDOWN = {"tcg": 10.0, "kvm": 1.0}
#: guests one environment boots at once: each is a QEMU process with its own memory
MAX_GUESTS = 64
#: a guest's vCPUs (each a host thread) and memory (1 TiB): beyond any host rtvbench runs on, so that only a
#: mistake (cpus = 100000) is refused here and QEMU never starts with what no machine can give
MAX_VCPUS, MAX_MEMORY_MB = 256, 1 << 20
#: the kernel's command line holds 2048 bytes on x86_64 and arm64; rtvbench's own options take the rest
MAX_CMDLINE = 1024
#: a kernel image is some MiB; a bigger "image" is something else (a disk, a device, a log)
MAX_KERNEL_BYTES = 256 << 20
STOP_GRACE_S = 2.0                  # a load: SIGTERM -> SIGKILL, as for the local target
ABANDON_S = 5.0                     # wait for the `exit` of a command we killed
POLL_S = 0.25
SHM_DEFAULT_MB, SHM_MAX_MB = 4, 1024
SHM_MEMDEV = "rtvbshm"


# ---------------------------------------------------------------------------
# Campaign keys


def _path(v: str, info: ValidationInfo) -> Path:
    p = Path(v).expanduser()
    if not p.is_absolute():
        p = Path((info.context or {}).get("base_dir") or Path.cwd()) / p
    return p


#: file systems whose files are the running kernel's own, never an image: /proc/self/mem reads this process
_KERNEL_FILES = ("/proc", "/sys", "/dev")


def _not_an_image(path: Path) -> str | None:
    """Why a path cannot be a kernel image, or None."""
    if not path.exists():
        return None
    resolved = path.resolve()
    if any(resolved.is_relative_to(top) for top in _KERNEL_FILES):
        return f"is a file of the running kernel ({resolved}), not a kernel image"
    if not path.is_file():
        return "is not a regular file"
    try:
        size = path.stat().st_size
    except OSError as e:
        return f"cannot be read ({e.strerror})"
    if size == 0:
        return "is empty"
    if size > MAX_KERNEL_BYTES:
        return f"is {size:,} bytes, more than a kernel image has ({MAX_KERNEL_BYTES:,})"
    return None


class QemuParams(StrictModel):
    arch: Literal["x86_64", "aarch64", "riscv64"]     # riscv64: a bare-metal image only
    kernel: Optional[str] = None                 # resolved to an absolute path
    image: Optional[str] = None                  # a bare-metal image instead of a Linux guest (partition.py)
    modules: Optional[str] = None                # default: <kernel dir>/modules when it exists
    cpus: int_range(1, MAX_VCPUS) = 1
    count: int_range(1, MAX_GUESTS) = 1     # before pin_vcpus, whose check needs it
    memory_mb: int_range(64, MAX_MEMORY_MB) = 512      # the kernel and the initramfs need 64 MiB
    cmdline: str = ""
    accel: Literal["auto", "kvm", "tcg"] = "auto"
    pin_vcpus: Optional[list[int_range(0, MAX_CPUS - 1)]] = None
    host_priority: Optional[int] = None
    boot_timeout_s: Optional[WaitS] = None
    hang_timeout_s: Optional[WaitS] = None
    network: bool = False                        # a virtio-net NIC per guest on the run's bridge (netns.py)
    shm: Optional[Name] = None                   # a shared-memory region (ivshmem), by name
    shm_size_mb: int = SHM_DEFAULT_MB

    @field_validator("shm_size_mb")
    @classmethod
    def _shm_size(cls, v: int) -> int:
        # A PCI BAR's size is a power of two.
        if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= SHM_MAX_MB or v & (v - 1):
            raise ValueError(f"must be a power of two from 1 to {SHM_MAX_MB} (MiB): the size of the "
                             "ivshmem device's BAR")
        return v

    @field_validator("kernel")
    @classmethod
    def _kernel(cls, v: str, info: ValidationInfo) -> str:
        p = _path(v, info)
        problem = _not_an_image(p)
        if problem is None and not p.is_file():
            raise ValueError(f"kernel image {p} does not exist; give the path of a kernel image "
                             "(relative to the campaign file) or get one with `rtvbench kernel fetch`")
        if problem:
            raise ValueError(f"kernel {p} {problem}; give the path of a kernel image file or get one with "
                             "`rtvbench kernel fetch`")
        arch, wanted = image_arch(p), info.data.get("arch")
        if arch is not None and wanted is not None and arch != wanted:
            raise ValueError(f"kernel {p} is an {arch} kernel, not {wanted}; use a kernel of the "
                             "guest's arch or change arch")
        return str(p)

    @field_validator("image")
    @classmethod
    def _image(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v is None:
            return None
        return image_path(v, info.data.get("arch"), (info.context or {}).get("base_dir"))

    @model_validator(mode="after")
    def _kernel_or_image(self):
        if self.kernel is None and self.image is None:
            raise ValueError('needs `kernel` (a Linux guest\'s kernel image) or `image = "bare-metal"` (the '
                             "probe's bare-metal image, docs/baremetal.md)")
        if self.kernel is not None and self.image is not None:
            raise ValueError("boots a Linux `kernel` or a bare-metal `image`, not both; drop one of the two")
        if self.kernel is not None and self.arch not in LINUX_ARCHES:
            raise ValueError(f"a Linux guest runs on {' and '.join(LINUX_ARCHES)} here, not {self.arch} (which "
                             'runs a bare-metal image); set image = "bare-metal" or another arch')
        if self.image is not None:
            problem = keys_problem(self)
            if problem:
                raise ValueError(problem)
        return self

    @field_validator("cmdline")
    @classmethod
    def _cmdline(cls, v: str) -> str:
        if len(v.encode()) > MAX_CMDLINE:
            raise ValueError(f"is {len(v.encode())} bytes, more than the {MAX_CMDLINE} the kernel's command line "
                             "leaves a campaign; keep the options the guest needs")
        if any(ord(c) < 32 for c in v):
            raise ValueError("must be one line of kernel options, without control characters")
        return v

    @field_validator("modules")
    @classmethod
    def _modules(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v is None:
            return None
        p = _path(v, info)
        if not p.is_dir():
            raise ValueError(f"modules directory {p} does not exist; name the directory of the "
                             "kernel's modules (relative to the campaign file) or drop the key")
        return str(p)

    @field_validator("host_priority")
    @classmethod
    def _priority(cls, v: int | None) -> int | None:
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= 99):
            raise ValueError("must be a SCHED_FIFO priority from 1 to 99")
        return v

    @field_validator("pin_vcpus")
    @classmethod
    def _pin(cls, v: list[int] | None, info: ValidationInfo) -> list[int] | None:
        if v is None:
            return None
        cpus, count = info.data.get("cpus", 1), info.data.get("count", 1)
        if len(v) not in (cpus, cpus * count):
            raise ValueError(f"names {len(v)} host CPUs; it needs one per vCPU ({cpus}, shared by every "
                             f"guest, or {cpus * count} for all {count} guests in turn)")
        allowed = os.sched_getaffinity(0)
        bad = [c for c in v if c not in allowed]
        if bad:
            raise ValueError(f"host CPU {bad[0]} is not one this machine lets rtvbench use "
                             f"(usable: {', '.join(map(str, sorted(allowed)))})")
        return v


# ---------------------------------------------------------------------------
# The guest as a Target


def _short(argv: list[str]) -> str:
    text = " ".join(argv)
    return "`" + (text if len(text) <= 60 else text[:57] + "...") + "`"


def _drain(guest: QemuGuest, cmd: Command, what: str, on_out: Callable[[str], None],
           on_err: Callable[[str], None], kill_at: list[float | None], watch: Watch | None = None) -> int | None:
    """Deliver the command's lines until its `exit`; its status, or None when the watch gave up on
    it. Raises TargetLost when the guest goes away or stays silent for hang_timeout_s.
    kill_at[0]: send SIGKILL once past it."""
    while True:
        if watch is not None and watch.tick():
            return None
        ev = cmd.next(POLL_S)
        if ev is None:
            problem = guest.problem()
            if problem:
                raise guest.lost(what, problem)
            if kill_at[0] is not None and time.monotonic() > kill_at[0]:
                kill_at[0] = None
                _signal(cmd, 9)
            continue
        if ev.kind == "out":
            on_out(ev.text)
        elif ev.kind == "err":
            on_err(ev.text)
        elif ev.kind == "exit":
            return ev.status
        else:
            raise guest.lost(what)


def _signal(cmd: Command, signum: int) -> None:
    """Have the agent signal the command's process group; a closed channel is the next read's news."""
    try:
        cmd.signal(signum)
    except ChannelClosed:
        pass


class GuestBackground(Background):
    """A command running in a guest, its lines delivered by a thread of its own so that a slow
    on_line never holds up the channel's reader."""

    def __init__(self, guest: QemuGuest, cmd: Command, on_line: Callable[[str], None] | None) -> None:
        self.argv = cmd.argv
        self.guest, self.cmd, self.on_line = guest, cmd, on_line
        self._status: int | None = None
        self._lost: str | None = None
        self._failure: str | None = None
        self._tail: collections.deque[str] = collections.deque(maxlen=50)
        self._thread = threading.Thread(target=self._pump, daemon=True, name=f"guest-cmd-{cmd.id}")
        self._thread.start()

    def _pump(self) -> None:
        while True:
            ev = self.cmd.events.get()
            if ev.kind == "out":
                if self.on_line is None:
                    self._tail.append(ev.text)
                elif self._failure is None:
                    try:
                        self.on_line(ev.text)
                    except Exception as e:  # noqa: BLE001 - reported through failure()
                        self._failure = str(e) or e.__class__.__name__
            elif ev.kind == "err":
                self._tail.append(ev.text)
            elif ev.kind == "exit":
                self._status = ev.status
                return
            else:
                self._lost = f"{self.guest.label} went away while it ran"
                return

    def poll(self) -> int | None:
        if self._thread.is_alive():
            return None
        return self._status if self._status is not None else -1

    def stop(self) -> None:
        for signum, grace in ((15, STOP_GRACE_S), (9, ABANDON_S)):
            if not self._thread.is_alive():
                break
            try:
                self.cmd.signal(signum)
            except ChannelClosed:
                break                   # the guest is gone, and the command with it
            deadline = time.monotonic() + grace
            while self._thread.is_alive() and time.monotonic() < deadline:
                self._thread.join(POLL_S)
                if self.guest.problem():
                    return              # lost or hung: the next command reports it
        self._thread.join(ABANDON_S)

    def output_tail(self) -> str:
        lines = list(self._tail) + ([self._lost] if self._lost else [])
        return "\n".join(lines)

    def failure(self) -> str | None:
        return self._failure


class ChannelTarget(Target):
    """run / start_background / read_file in one machine served by the probe's agent (a guest, or a
    board over its serial line: labgrid_place.py); subclasses say which. The "guest" is anything with
    QemuGuest's `channel`, `lock`, `label`, `problem()`, `lost()` and `fresh_boot_wanted`."""

    @abstractmethod
    def _guest(self) -> QemuGuest:
        """This target's guest, booted (afresh if it was lost or must be emptied)."""

    def _start(self, guest: QemuGuest, argv: list[str]) -> Command:
        with guest.lock:
            try:
                return guest.channel.start(argv)
            except ChannelClosed:
                raise guest.lost(f"the start of {_short(argv)}") from None

    def run(self, argv: list[str], on_line: Callable[[str], None],
            deadline: Deadline | None = None) -> Completed:
        guest = self._guest()
        what = _short(argv)
        cmd = self._start(guest, argv)
        err: collections.deque[str] = collections.deque(maxlen=200)
        kill_at: list[float | None] = [None]
        # The agent signals the command's whole process group (it runs in a session of its own).
        watch = Watch(deadline, lambda: _signal(cmd, 15), lambda: _signal(cmd, 9))

        def kill_after(seconds: float):
            # The guest's agent kills the command: _drain sends SIGKILL once this time has passed.
            kill_at[0] = time.monotonic() + seconds
            return lambda: None

        try:
            status, interrupted = drain_or_stop(
                lambda: _drain(guest, cmd, what, on_line, err.append, kill_at, watch),
                lambda: _signal(cmd, 2), kill_after)
        except TargetLost:
            raise
        except BaseException:
            self._abandon(guest, cmd)       # on_line raised, or a second Ctrl-C
            raise
        # Given up on after SIGKILL: the guest did not report its end, and cannot say its status.
        return Completed(-9 if status is None else status, "\n".join(err), interrupted,
                         overdue=watch.overdue, killed=watch.sent == 2)

    @staticmethod
    def _abandon(guest: QemuGuest, cmd: Command) -> None:
        try:
            cmd.signal(9)
        except ChannelClosed:
            return
        deadline = time.monotonic() + ABANDON_S
        while time.monotonic() < deadline and not guest.problem():
            ev = cmd.next(POLL_S)
            if ev is not None and ev.kind in ("exit", "closed"):
                return

    def start_background(self, argv: list[str], on_line: Callable[[str], None] | None = None, *,
                         alone: bool = False) -> Background:
        guest = self._guest()
        return GuestBackground(guest, self._start(guest, argv), on_line)

    def read_file(self, path: str) -> str:
        return self._read_from(self._guest(), path)

    @staticmethod
    def _read_from(guest: QemuGuest, path: str) -> str:
        with guest.lock:
            try:
                cmd = guest.channel.read(path)
            except ChannelClosed:
                raise guest.lost(f"reading {path}") from None
        lines: list[str] = []
        err: list[str] = []
        status = _drain(guest, cmd, f"reading {path}", lines.append, err.append, [None])
        if status != 0:
            raise TargetError(f"cannot read {path} in {guest.label} "
                              f"({'; '.join(err) or f'status {status}'}).")
        return "".join(line + "\n" for line in lines)

    def remove_dir(self, path: str) -> None:
        # The guest has no rm, and the probe removes its io load's directory itself on every
        # path but SIGKILL. What a killed load leaves lives in the guest's /tmp, a tmpfs: in
        # the guest's memory. Rather than let it shrink the memory of later measurements, the
        # guest is booted afresh before its next command, which empties /tmp.
        self._guest_record().fresh_boot_wanted = True

    @abstractmethod
    def _guest_record(self) -> QemuGuest:
        """This target's guest as it is, without booting it."""

    def known_cpus(self) -> list[int] | None:
        return list(range(self.params.cpus))        # the guest's vCPUs, every one the probe's

    def check_program(self, program: str) -> str | None:
        if program == PROBE_PATH:
            return None
        return (f'program "{program}" cannot run in a qemu guest: its initramfs holds only rtvb-probe '
                f"(as {PROBE_PATH}); measure a guest with the probe's benchmark kinds and load it with "
                "probe loads (kind = \"cpu\", \"mem\", ...)")


class QemuTarget(ChannelTarget, PowerCycling, HostCost, Pausing, OwnedKernel):
    kind = "qemu"
    Params = QemuParams

    def __init__(self, name: str, params: QemuParams) -> None:
        super().__init__(name, params)
        self._guests: list[QemuGuest] | None = None
        self._network: netns.GuestNetwork | None = None
        self._addresses: list[str] = []         # each guest's on the network, when it has one
        self._facts: dict[str, Any] = {}
        self._shm_held = False
        self.neighbours: list[Target] = [QemuNeighbour(self, i) for i in range(1, params.count)]

    # -- preparing and booting ------------------------------------------------

    def _prepare(self) -> list[QemuGuest]:
        """Everything short of starting QEMU, once: binary, accelerator, probe, initramfs."""
        p: QemuParams = self.params
        if self._guests is not None and (not p.network or self._network is not None):
            return self._guests
        why = netns.problem() if p.network else None
        if why:
            raise TargetError(f"environment {self.name}: {why}.")
        qemu = shutil.which(QEMU_BINARY[p.arch])
        if qemu is None:
            raise TargetError(f"{QEMU_BINARY[p.arch]} is not installed, so environment {self.name} cannot "
                              f"boot; install it (apt-get install {QEMU_PACKAGE[p.arch]}).")
        accel = self._accel(qemu)
        kernel = Path(p.kernel)
        release = kernel_release(kernel)
        config = kernel_config_for(kernel, release)
        modules_dir = Path(p.modules) if p.modules else kernel.parent / "modules"
        wanted = WANTED_MODULES + (NET_MODULES if p.network else ())
        if modules_dir.is_dir():
            modules = resolve_modules(modules_dir, release, config, wanted)
        elif config is not None and "m" in (config.get("CONFIG_VIRTIO_CONSOLE"), config.get("CONFIG_VIRTIO_PCI"),
                                            config.get("CONFIG_VIRTIO_NET") if p.network else None):
            raise InputError(f"environment {self.name}: kernel {kernel} has virtio_console, virtio_pci or "
                             "virtio_net as modules and no `modules` directory is given; set modules to that "
                             "kernel's modules directory.")
        else:
            modules = []
        initrd = build_initramfs(self._probe_binary(), modules)
        boot_kernel = (pvh_kernel(kernel) if p.arch == "x86_64" else None) or kernel
        cmdline = f"console={CONSOLE[p.arch]} rdinit={PROBE_PATH} panic=-1 {p.cmdline}".strip()
        self._facts = {"accel": accel, "kernel_release": release, "qemu": _qemu_version(qemu),
                       "modules": [m.name for m in modules]}
        network = netns.acquire(self) if p.network else None
        self._network, self._addresses = network, []
        # The region's file exists before QEMU maps it: created here, removed in close().
        shm_args = []
        if p.shm is not None and not self._shm_held:
            path = shm_regions.hold(p.shm, p.shm_size_mb << 20)
            self._shm_held = True
            shm_args = ["-object", f"memory-backend-file,id={SHM_MEMDEV},share=on,mem-path={path},"
                        f"size={p.shm_size_mb}M", "-device", f"ivshmem-plain,memdev={SHM_MEMDEV}"]
        guests = []
        for i in range(p.count):
            extra, guest_cmdline = [], cmdline
            if network is not None:
                # The NIC: a tap device on the run's bridge, opened by QEMU inside the namespace; the
                # probe as init gives the guest its address from the kernel command line.
                tap, address, mac = network.add_guest()
                self._addresses.append(address)
                extra = ["-netdev", f"tap,id=rtvbnet,ifname={tap},script=no,downscript=no",
                         "-device", f"virtio-net-pci,netdev=rtvbnet,mac={mac},romfile="]
                guest_cmdline = f"{cmdline} rtvb.ip={address}/{netns.PREFIX_LEN}"
            pin = None
            if p.pin_vcpus is not None:
                pin = (p.pin_vcpus if len(p.pin_vcpus) == p.cpus
                       else p.pin_vcpus[i * p.cpus:(i + 1) * p.cpus])
            cfg = GuestConfig(arch=p.arch, qemu=qemu, kernel=boot_kernel, initrd=initrd, cmdline=guest_cmdline,
                              accel=accel, cpus=p.cpus, memory_mb=p.memory_mb,
                              boot_timeout_s=p.boot_timeout_s or BOOT_TIMEOUT_S[accel],
                              hang_timeout_s=p.hang_timeout_s or HANG_TIMEOUT_S[accel],
                              pin=pin, host_priority=p.host_priority,
                              extra=extra + (list(shm_args) if i == 0 else []),   # shm: the measured guest only
                              netns=network.name if network else None)
            label = (f"the guest of environment {self.name}" if i == 0
                     else f"neighbour guest {i + 1} of environment {self.name}")
            guests.append(QemuGuest(cfg, label))
        self._guests = guests
        return guests

    def _accel(self, qemu: str) -> str:
        p: QemuParams = self.params
        if p.accel == "tcg":
            return "tcg"
        if HOST_ARCH.get(platform.machine()) != p.arch:
            if p.accel == "kvm":
                raise TargetError(f"environment {self.name}: accel = \"kvm\" runs only guests of the host's "
                                  f"architecture ({platform.machine()}), not {p.arch}; use accel = \"auto\" "
                                  "or \"tcg\".")
            return "tcg"
        problem = kvm_problem(qemu, p.arch, machine_args(p.arch, "kvm"))
        if problem is None:
            return "kvm"
        if p.accel == "kvm":
            raise TargetError(f"environment {self.name}: accel = \"kvm\" but KVM cannot run a guest here "
                              f"({problem}); use accel = \"auto\" or \"tcg\".")
        return "tcg"

    def _probe_binary(self) -> Path:
        arch = self.params.arch
        path = probe_mod.probe_for_arch(arch)
        hint = "make probe" if HOST_ARCH.get(platform.machine()) == arch else "make probe-cross"
        try:
            with open(path, "rb") as f:
                head = f.read(20)
        except OSError as e:
            raise TargetError(f"cannot read the {arch} probe {path} for environment {self.name} "
                              f"({e.strerror}); rebuild it with `{hint}`.") from None
        # The guest's /init must be an executable of the guest's architecture, whatever the file says.
        machine = int.from_bytes(head[18:20], "little") if head[:4] == b"\x7fELF" else None
        if machine != ELF_MACHINE[arch]:
            raise TargetError(f"{path} is not an {arch} executable, so it cannot be the guest's /init; "
                              f"rebuild it with `{hint}`.")
        return path

    def _boot(self, guests: list[QemuGuest]) -> None:
        """Boot the guests that are down, all at once: QEMU started for each, then every one
        awaited (booting is the guests' work, not ours)."""
        down = [g for g in guests if not g.up]
        try:
            for g in down:
                g.launch()
            pending = list(down)
            while pending:
                pending = [g for g in pending if not g.await_ready(time.monotonic() + 0.1)]
        except BaseException:
            for g in down:
                if not g.up:
                    g.kill()
            raise

    def _ensure(self, index: int) -> QemuGuest:
        guests = self._prepare()
        g = guests[index]
        if g.up and g.fresh_boot_wanted and not g.channel.active():
            g.poweroff()
        if not g.up:
            g.fresh_boot_wanted = False
            self._boot([g])
        return g

    # -- Target ---------------------------------------------------------------

    def deploy_probe(self) -> str:
        self._boot(self._prepare())
        return PROBE_PATH

    def _guest(self) -> QemuGuest:
        return self._ensure(0)

    def _guest_record(self) -> QemuGuest:
        return self._prepare()[0]

    def slowdown(self) -> float:
        return SLOWDOWN.get(self._facts.get("accel"), 1.0)

    def describe(self) -> dict[str, Any]:
        return self._describe(0)

    def _describe(self, index: int) -> dict[str, Any]:
        p: QemuParams = self.params
        guests = self._guests or []
        g = guests[index] if index < len(guests) else None
        facts = self._facts
        return {"target": "qemu", "arch": p.arch, "accel": facts.get("accel"),
                # TCG runs the guest's instructions through a translator: its figures describe
                # an emulator, not the virtualisation cost on real hardware.
                "emulated": facts.get("accel") == "tcg" if facts else None,
                "kernel": p.kernel, "kernel_release": facts.get("kernel_release"),
                "cpus": p.cpus, "memory_mb": p.memory_mb, "count": p.count,
                "guest": index + 1, "cmdline": p.cmdline,
                "pin_vcpus": (g.cfg.pin if g else None), "host_priority": p.host_priority,
                "boot_s": round(g.boot_s, 3) if g and g.boot_s is not None else None,
                "guest_boottime_ns": g.boottime_ns if g else None,
                "probe_version": g.version if g else None,
                "network": p.network,
                "qemu": facts.get("qemu"),
                **({"shm": p.shm, "shm_size_mb": p.shm_size_mb} if p.shm is not None and index == 0 else {})}

    def host_usage(self) -> dict[str, Any] | None:
        guests = self._guests or []
        usage = sample_host_usage(guests)
        for g in usage["guests"] if usage else []:
            g.update(self._guest_memory(guests[g["guest"] - 1]))
        return usage

    def _guest_memory(self, guest: QemuGuest) -> dict[str, int]:
        """The guest's own view of its memory (its /proc/meminfo, through its agent), beside what its QEMU
        process takes of the host's: {} when the guest cannot tell now (being restarted by a neighbour's
        disruption, or a kernel without MemAvailable). Read from the guest as it is, never booting it,
        and not from a paused one, which could not answer."""
        if guest.paused:
            return {}
        try:
            mem = parse_meminfo(self._read_from(guest, "/proc/meminfo"))
        except (TargetError, ValueError):
            return {}
        if "MemTotal" not in mem or "MemAvailable" not in mem:
            return {}
        return {"guest_mem_total_kib": mem["MemTotal"], "guest_mem_available_kib": mem["MemAvailable"]}

    def power_cycle(self, hard: bool = False) -> dict[str, float]:
        """The measured guest off (its neighbours keep running) and booted again; see cycle_guest."""
        return self.cycle_guest(0, hard)

    def cycle_guest(self, index: int, hard: bool = False) -> dict[str, float]:
        """One guest off and booted again from a fresh QEMU process, so every phase of a cold boot is
        in the time: asked to power off, or (`hard`) QEMU killed as a crash would end it."""
        g = self._prepare()[index]
        g.kill() if hard else g.poweroff()
        self._boot([g])
        phases = g.boot_phases()
        if phases is None:
            raise TargetError(f"the probe in {g.label} did not send the boot's clocks with `ready`; "
                              "rebuild the probes (make probe probe-cross).")
        return phases

    def pause(self) -> None:
        for g in self._guests or []:
            g.pause()

    def resume(self) -> None:
        for g in self._guests or []:
            g.resume()

    def close(self) -> None:
        for g in self._guests or []:
            g.poweroff()
        if self._network is not None:
            self._network = None
            netns.release(self)
        if self._shm_held:
            self._shm_held = False
            shm_regions.release(self.params.shm)

    # -- round trips (the ipc benchmark's peer) -------------------------------

    reaches = ("local", "qemu")

    def network_namespace(self) -> str | None:
        return self._network.name if self._network is not None else None

    def shm_region(self) -> str | None:
        return self.params.shm

    def round_trip_problem(self, peer: Target, transport: str = "tcp") -> str | None:
        if transport == "shm":
            return super().round_trip_problem(peer, transport)     # a region the two share, not a network
        if peer is self:
            return None
        for end in (self, peer):
            if end.kind == "qemu" and not end.params.network:
                return (f"environment {end.name} is a qemu guest without a network, so it cannot do round "
                        f"trips with environment {peer.name if end is self else self.name}; set "
                        f"`network = true` in environment {end.name}")
        if peer.kind not in self.reaches:
            return (f"environment {peer.name} cannot be reached for round trips from {self.name}: a guest's "
                    "network lies in a namespace on this machine that only local environments and other "
                    "guests join; measure round trips between a qemu environment and a local or another "
                    "qemu one, or drop `peer` from the ipc benchmark")
        return None

    def round_trip_address(self, peer: Target) -> str:
        if peer is self:
            return "127.0.0.1"
        problem = self.round_trip_problem(peer)
        if problem:
            raise TargetError(f"{problem}.")
        if peer.kind == "local":
            return self._network.host_address     # the bridge, inside the namespace
        return peer.guest_address()

    def guest_address(self) -> str:
        """The measured guest's address on the run's network (where its servers listen)."""
        self._prepare()
        return self._addresses[0]


class QemuNeighbour(ChannelTarget, PowerCycling):
    """Guest number index+1 of a `count = N` environment: where loads run beside the measured guest."""

    kind = "qemu"
    Params = QemuParams

    def __init__(self, parent: QemuTarget, index: int) -> None:
        super().__init__(f"{parent.name}#{index + 1}", parent.params)
        self.parent, self.index = parent, index

    def deploy_probe(self) -> str:
        self.parent._ensure(self.index)
        return PROBE_PATH

    def _guest(self) -> QemuGuest:
        return self.parent._ensure(self.index)

    def _guest_record(self) -> QemuGuest:
        return self.parent._prepare()[self.index]

    def power_cycle(self, hard: bool = False) -> dict[str, float]:
        return self.parent.cycle_guest(self.index, hard)

    def describe(self) -> dict[str, Any]:
        return self.parent._describe(self.index)

    def close(self) -> None:
        guests = self.parent._guests
        if guests is not None:
            guests[self.index].poweroff()


@functools.lru_cache(maxsize=None)
def _qemu_version(qemu: str) -> str | None:
    try:
        out = subprocess.run([qemu, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"version (\S+(?: \([^)]*\))?)", out)
    return m.group(1) if m else (out.splitlines() or [None])[0]
