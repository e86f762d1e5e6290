"""A qemu environment that boots the probe's bare-metal image (docs/baremetal.md) instead of a Linux
guest: a real-time partition measured with the Linux probe's method, beside the campaign's other
environments.

The image serves the agent protocol's subset on its PL011 UART, which QEMU connects to its stdio: the
pipes are the serial port of serial_line.SerialLine, so commands, the heartbeat and losing the image
are the serial-line client's. The image has no OS under it: no files, no processes, no loads, and of the
benchmark kinds those whose `freestanding_options` say so. It says so through capabilities.ProbeSubset:
the campaign check refuses the rest at validate, and a kind gives it the part of its command line it
takes (Benchmark.execute).
"""

from __future__ import annotations

import atexit
import fcntl
import os
import select
import shutil
import subprocess
import tempfile
import termios
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from rtvbench.errors import TargetError, TargetLost
from rtvbench.targets.base import Background, Completed, Deadline
from rtvbench.targets.capabilities import HostCost, PowerCycling, ProbeSubset
from rtvbench.targets.local import _die_with_parent
from rtvbench.targets.qemu.channel import Command
from rtvbench.targets.qemu.host_usage import sample as sample_host_usage
from rtvbench.targets.qemu.image import FIRMWARE, MACHINE, image_board
from rtvbench.targets.qemu.target import (BOOT_TIMEOUT_S, HANG_TIMEOUT_S, QEMU_BINARY, QEMU_PACKAGE, SHM_MEMDEV,
                                          SLOWDOWN, ChannelTarget, _qemu_version)
from rtvbench.targets import shm as shm_regions
# The module, not the class: serial_line imports this package (its channel), which imports this module.
from rtvbench.targets import serial_line

MEMORY_MB = 128                 # the image takes less than 1 MiB; QEMU's virt wants some RAM
#: what the image's probe is called in a command line: the runner's argv[0], never a path
PROBE_NAME = "rtvb-probe"
POWEROFF_TIMEOUT_S = 5.0

_live: set[subprocess.Popen] = set()


@atexit.register
def _kill_all() -> None:
    # An exit path that skips close() still leaves no image running.
    for proc in list(_live):
        proc.kill()


class ImagePort:
    """QEMU's stdio, which carries the image's UART, as the pyserial-like port SerialLine reads: read
    with a timeout, write, in_waiting. Opening it starts QEMU; closing it ends QEMU."""

    def __init__(self, argv: list[str], label: str, boot_timeout_s: float) -> None:
        self.timeout: float | None = None
        self.label = label
        self._stderr = tempfile.TemporaryFile()
        self.started = time.monotonic()        # a boot is timed from here to the image's `ready`
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                                         preexec_fn=_die_with_parent)
        except OSError as e:
            self._stderr.close()
            raise TargetError(f"cannot start QEMU for {label} ({e.strerror or e}).") from None
        _live.add(self.proc)
        # The image's first line (`ready`) opens the heartbeat's wait: QEMU's own start-up, slow on a
        # busy machine, is not the image's.
        ready, _, _ = select.select([self.proc.stdout], [], [], boot_timeout_s)
        if not ready:
            why = self.ended()
            self.close()
            raise TargetError(f"{label} said nothing within {boot_timeout_s:g} s of QEMU's start ({why}).")

    def ended(self) -> str:
        """How QEMU ended (with the end of its stderr), or that it still runs."""
        if self.proc.poll() is None:
            return "QEMU still runs"
        self._stderr.seek(0)
        tail = self._stderr.read().decode(errors="replace").strip().splitlines()[-3:]
        return f"QEMU exited with status {self.proc.returncode}" + (f": {' '.join(tail)}" if tail else "")

    @property
    def in_waiting(self) -> int:
        buf = bytearray(4)
        fcntl.ioctl(self.proc.stdout.fileno(), termios.FIONREAD, buf)
        return int.from_bytes(buf, "little")

    def read(self, size: int) -> bytes:
        fd = self.proc.stdout.fileno()
        ready, _, _ = select.select([fd], [], [], self.timeout)
        if not ready:
            return b""
        data = os.read(fd, size)
        if not data:
            raise EOFError("QEMU closed the image's serial line")
        return data

    def write(self, data: bytes) -> None:
        fd, view = self.proc.stdin.fileno(), memoryview(data)
        while view:
            view = view[os.write(fd, view):]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        _live.discard(self.proc)
        for f in (self.proc.stdin, self.proc.stdout, self._stderr):
            try:
                f.close()
            except OSError:
                pass


@dataclass
class _Running:
    """The running image as host_usage.sample() reads a guest."""
    proc: subprocess.Popen
    vcpu_threads: list[int]
    up: bool = True


def _vcpu_threads(pid: int) -> list[int]:
    """QEMU's vCPU threads, by the names debug-threads gives them."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            if (task / "comm").read_text().startswith("CPU "):
                found.append(int(task.name))
        except (OSError, ValueError):
            continue
    return found


class BareMetalPartition(ChannelTarget, ProbeSubset, HostCost, PowerCycling):
    """A qemu environment whose `image` is a bare-metal image: QEMU's virt machine under TCG, the image
    on its one CPU, its UART the agent protocol's line."""

    kind = "qemu"

    def __init__(self, name: str, params: Any) -> None:
        super().__init__(name, params)
        self.label = f"the bare-metal image of environment {name}"
        self.line = serial_line.SerialLine(self.label, self._open_port, self._close_port,
                               params.hang_timeout_s or HANG_TIMEOUT_S["tcg"])
        self._port: ImagePort | None = None
        self._qemu_version: str | None = None
        self._signalled: set[int] = set()      # the signals the running command was sent
        self._shm_held = False

    # -- the QEMU process, as the serial line's port --------------------------

    def _qemu_argv(self) -> list[str]:
        p = self.params
        qemu = shutil.which(QEMU_BINARY[p.arch])
        if qemu is None:
            raise TargetError(f"{QEMU_BINARY[p.arch]} is not installed, so environment {self.name} cannot boot; "
                              f"install it (apt-get install {QEMU_PACKAGE[p.arch]}).")
        self._qemu_version = _qemu_version(qemu)
        machine, cpu = MACHINE[p.arch]
        # debug-threads names the vCPU thread ("CPU 0/TCG"), which host_usage() tells from QEMU's others.
        return [qemu, "-name", f"{PROBE_NAME},debug-threads=on", "-accel", "tcg", "-machine", machine,
                "-cpu", cpu, "-smp", "1", "-m", str(self._memory_mb()), "-nodefaults", "-nographic", "-no-reboot",
                "-monitor", "none", "-serial", "stdio", *FIRMWARE.get(p.arch, []), "-kernel", p.image,
                *self._shm_args()]

    def _shm_args(self) -> list[str]:
        """The region as an ivshmem-plain device, which the image finds on its PCI bus (the region is held
        from the first boot to close: a boot after a lost one maps the same file)."""
        p = self.params
        if p.shm is None:
            return []
        path = shm_regions.hold(p.shm, p.shm_size_mb << 20) if not self._shm_held else shm_regions.region_path(p.shm)
        self._shm_held = True
        return ["-object", f"memory-backend-file,id={SHM_MEMDEV},share=on,mem-path={path},size={p.shm_size_mb}M",
                "-device", f"ivshmem-plain,memdev={SHM_MEMDEV}"]

    def shm_region(self) -> str | None:
        return self.params.shm

    def _memory_mb(self) -> int:
        p = self.params
        return p.memory_mb if "memory_mb" in p.model_fields_set else MEMORY_MB

    def _open_port(self) -> ImagePort:
        self._port = ImagePort(self._qemu_argv(), self.label, self.params.boot_timeout_s or BOOT_TIMEOUT_S["tcg"])
        return self._port

    def _close_port(self) -> None:
        port, self._port = self._port, None
        if port is not None:
            port.close()

    def _guest(self) -> serial_line.SerialLine:
        if self.line.problem() is not None:
            try:
                self.line.connect()
            except TargetError as e:
                why = self._port.ended() if self._port is not None else str(e)
                self.line.drop()
                raise TargetLost(f"{self.label} did not say `ready` ({why}); check that it is an image "
                                 "`make baremetal` builds.") from None
        return self.line

    def _guest_record(self) -> serial_line.SerialLine:
        return self.line

    # -- Target ---------------------------------------------------------------

    def deploy_probe(self) -> str:
        try:
            self._guest()
        except TargetLost as e:
            raise TargetError(str(e)) from None
        return PROBE_NAME

    def run(self, argv: list[str], on_line: Callable[[str], None],
            deadline: Deadline | None = None) -> Completed:
        args = argv[1:] if argv[:1] == [PROBE_NAME] else argv
        if args == ["--version"]:
            return self._version(on_line)
        self._signalled = set()
        try:
            return super().run(args, on_line, deadline)
        except TargetLost:
            if 9 not in self._signalled:
                raise
            # Ended by us (see _start): stopped as a killed command is, not lost.
            return Completed(-9, "the image could not stop its run, so QEMU was ended",
                             interrupted=2 in self._signalled, overdue=15 in self._signalled, killed=True)

    def _start(self, guest: serial_line.SerialLine, argv: list[str]) -> Command:
        cmd = super()._start(guest, argv)
        # SIGINT and SIGTERM (Ctrl-C, the watchdog) reach the image, which polls its UART between
        # activations or measured points and ends the run with its results so far. Where it cannot
        # (masked in a stall, or an interval longer than the grace), SIGKILL follows after the grace and
        # ends QEMU, as killing a process ends it; the next command boots afresh.
        send = cmd.signal

        def signal(signum: int) -> None:
            self._signalled.add(signum)
            if signum == 9 and self._port is not None:
                self._port.proc.kill()
            else:
                send(signum)
        cmd.signal = signal
        return cmd

    def _version(self, on_line: Callable[[str], None]) -> Completed:
        # What a soak's health check asks: the image answers when its heartbeat is fresh (the line
        # is connected afresh, booting the image again, when it was lost).
        on_line(f"{PROBE_NAME} {self._guest().channel.version} (bare-metal image)")
        return Completed(0, "")

    def start_background(self, argv: list[str], on_line: Callable[[str], None] | None = None, *,
                         alone: bool = False) -> Background:
        raise TargetError(f"{self.label} runs one command at a time and nothing in the background.")

    def read_file(self, path: str) -> str:
        raise TargetError(f"{self.label} has no files, so {path} cannot be read there.")

    def read_regular_file(self, path: str, max_bytes: int) -> str | None:
        raise TargetError(f"{self.label} has no files, so {path} cannot be read there.")

    def remove_dir(self, path: str) -> None:
        pass                            # no files: nothing was left behind

    def check_program(self, program: str) -> str | None:
        return (f'program "{program}" cannot run in environment {self.name}, a bare-metal image, which runs '
                "nothing but the probe's own measurements it serves")

    def known_cpus(self) -> list[int] | None:
        return [0]

    def host_usage(self) -> dict[str, Any] | None:
        port = self._port
        if port is None or port.proc.poll() is not None:
            return None
        try:
            threads = _vcpu_threads(port.proc.pid)
        except OSError:
            return None                 # QEMU ended meanwhile
        return sample_host_usage([_Running(port.proc, threads)])

    def slowdown(self) -> float:
        return SLOWDOWN["tcg"]

    def describe_self(self) -> str:
        return "a bare-metal image"

    def memory_area_bytes(self) -> int:
        return image_board(self.params.image).mem_area_bytes

    def describe(self) -> dict[str, Any]:
        p = self.params
        machine, cpu = MACHINE[p.arch]
        channel = self.line.channel
        return {"target": "qemu", "system": "bare-metal image", "arch": p.arch, "accel": "tcg",
                # TCG emulates the CPU and follows the host's clock: a latency is mostly how soon
                # QEMU's thread got to the emulated interrupt.
                "emulated": True, "image": p.image, "machine": machine, "cpu": cpu, "cpus": 1,
                "memory_mb": self._memory_mb(),
                "probe_version": channel.version if channel is not None else None,
                "qemu": self._qemu_version}

    def power_cycle(self, hard: bool = False) -> dict[str, float]:
        """The image off (asked to power off, or `hard`: QEMU killed) and booted from a fresh QEMU. The
        host times the boot from QEMU's start to the image's `ready`, whose boot-ns is the machine's
        counter at that moment: it starts with the emulated machine, so the difference is QEMU's own start."""
        self._end(ask=not hard)
        self._guest()
        channel, port = self.line.channel, self._port
        if channel is None or port is None or channel.ready_at is None or channel.boottime_ns is None:
            raise TargetError(f"{self.label} did not send its counter with `ready`; rebuild it with "
                              "`make baremetal`.")
        total = (channel.ready_at - port.started) * 1e9
        return {"total_ns": total, "to_counter_ns": total - channel.boottime_ns,
                "start_ns": float(channel.boottime_ns)}

    def _end(self, ask: bool) -> None:
        channel, port = self.line.channel, self._port
        if ask and channel is not None and port is not None:
            try:
                channel.poweroff()
                port.proc.wait(POWEROFF_TIMEOUT_S)
            except Exception:  # noqa: BLE001 - closed or slow alike: the port's close kills QEMU
                pass
        self.line.drop()
        self._close_port()
        if self._shm_held:
            self._shm_held = False
            shm_regions.release(self.params.shm)

    def close(self) -> None:
        self._end(ask=True)

