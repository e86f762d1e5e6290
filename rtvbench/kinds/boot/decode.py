"""The `boot` kind's figures: one cold boot per measurement, in ns (`_us` and `_ms` too).

A qemu guest:
  `total`      QEMU started -> the guest's probe said `ready`
  `to_kernel`  QEMU started -> the guest kernel's clock started (QEMU, firmware, kernel loading)
  `kernel`     the kernel's clock started -> /init started
  `init`       /init started -> `ready` (mounts, modules, the host channel)

A board reached over ssh, rebooted by its reboot_command (times on this machine from sending it):
  `total`        -> the probe answered again over a new ssh login
  `down`         -> the board went away (closed the connection, or stopped answering)
  `login`        -> the first ssh login that worked again
  `to_kernel`    -> the new kernel's clock started (the board's uptime read with the probe's answer)
  `from_kernel`  the kernel's clock started -> the probe answered (kernel, userland, ssh, the probe)

A bare-metal image (a qemu environment with `image`):
  `total`       QEMU started -> the image said `ready`
  `to_counter`  QEMU started -> the machine's counter started (QEMU's own start, loading the image)
  `start`       the counter started -> `ready` (riscv64: OpenSBI; the image's start-up, its MMU and UART)

Repetitions are boots: the report's average (min, max) over them is the usual way boot times are
given."""

from __future__ import annotations

from typing import Any

from rtvbench.analysis.kind import register
from rtvbench.analysis.quantities import TIME, QuantityKind, number
from rtvbench.results import Measurement

PHASES = ("total", "to_kernel", "kernel", "init", "down", "login", "from_kernel", "to_counter", "start")
_LABELS = {"total": "boot, start to probe ready", "to_kernel": "to the new kernel's clock",
           "kernel": "kernel, to /init", "init": "init, to probe ready",
           "down": "reboot command to the board gone", "login": "reboot command to a new ssh login",
           "from_kernel": "the new kernel's clock to probe ready",
           "to_counter": "to the machine's counter", "start": "firmware and image, to ready"}


class BootKind(QuantityKind):
    name = "boot"

    def quantities(self, m: Measurement) -> dict[str, tuple[str, float]]:
        out = {}
        for r in m.results:
            for phase in PHASES:
                v = number(r.get(f"{phase}_ns"))
                if v is not None:
                    out[phase] = (TIME, v)
        return out

    def family(self, name: str) -> str | None:
        return TIME if name in PHASES else None

    def order(self, name: str) -> tuple:
        return (PHASES.index(name),)

    def label(self, figure: str) -> str:
        parts = self.split(figure)
        return _LABELS.get(parts[0], figure) if parts else figure

    def procedure(self, benchmark: dict[str, Any]) -> str | None:
        return ("Each repetition is one power cycle made by rtvbench, timed on this machine: a qemu guest's QEMU "
                "is ended and a fresh one started, and the boot runs from QEMU's start to the first record the "
                "guest's probe prints (`ready`); a board is sent its `reboot_command` (or switched off and on), "
                "and the boot runs from that moment to the probe answering over a new ssh login. The command "
                "below then runs in the booted environment, to show the probe works again.")

    def describe(self, benchmark: dict[str, Any], params: dict[str, Any] | None) -> str:
        return ("Each repetition switches the measured environment off and boots it again, until its probe "
                "answers and runs again. A qemu guest boots from a fresh QEMU process: the boot from QEMU's "
                "start to the probe's `ready`, split where the guest kernel's clock starts (before it: QEMU, "
                "firmware, loading and decompressing the kernel) and where /init starts (before it: the "
                "kernel; after it: mounts, modules and the host channel); under TCG every phase is emulated, "
                "so the figures describe the emulator as much as the guest. A board reached over ssh runs its "
                "reboot_command: times count from sending it, to the board going away (`down`), the first "
                "ssh login again (`login`) and the probe answering (`total`); the board's uptime then places "
                "its new kernel's start (`to_kernel`: shutdown, firmware and boot loader; `from_kernel`: "
                "kernel, userland, ssh and the probe). A bare-metal image boots from a fresh QEMU too, to its "
                "`ready`, split where the emulated machine's counter starts (`to_counter`: QEMU's own start and "
                "loading the image; `start`: the firmware, OpenSBI on riscv64, and the image's start-up).")


register(BootKind())
