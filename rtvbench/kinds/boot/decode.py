"""The `boot` kind's figures: one cold boot per measurement, in ns (`_us` and `_ms` too).

  `total`      QEMU started -> the guest's probe said `ready`
  `to_kernel`  QEMU started -> the guest kernel's clock started (QEMU, firmware, kernel loading)
  `kernel`     the kernel's clock started -> /init started
  `init`       /init started -> `ready` (mounts, modules, the host channel)

Repetitions are boots: the report's average (min, max) over them is the usual way boot times are
given."""

from __future__ import annotations

from typing import Any

from rtvbench.analysis.kind import register
from rtvbench.analysis.quantities import TIME, QuantityKind, number
from rtvbench.results import Measurement

PHASES = ("total", "to_kernel", "kernel", "init")
_LABELS = {"total": "boot, QEMU start to probe ready", "to_kernel": "QEMU and firmware, to the kernel's clock",
           "kernel": "kernel, to /init", "init": "init, to probe ready"}


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

    def describe(self, benchmark: dict[str, Any], params: dict[str, Any] | None) -> str:
        return ("Each repetition switches the measured guest off and boots it again from a fresh QEMU "
                "process, until its probe answers and runs again: the boot from QEMU's start to the probe's "
                "`ready`, split where the guest kernel's clock starts (before it: QEMU, firmware, loading "
                "and decompressing the kernel) and where /init starts (before it: the kernel; after it: "
                "mounts, modules and the host channel). Under TCG every phase is emulated: the figures "
                "describe the emulator as much as the guest.")


register(BootKind())
