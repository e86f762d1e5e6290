"""What `target = "qemu"` makes of an environment: a Linux guest booted from its `kernel` (target.py), or
with `image` instead the probe's bare-metal image, a partition (partition.py)."""

from __future__ import annotations

from rtvbench.targets.base import TARGETS, Target
from rtvbench.targets.qemu.partition import BareMetalPartition
from rtvbench.targets.qemu.target import QemuParams, QemuTarget


@TARGETS.register("qemu")
class QemuEnvironment:
    kind = "qemu"
    Params = QemuParams

    def __new__(cls, name: str, params: QemuParams) -> Target:
        return (QemuTarget if params.image is None else BareMetalPartition)(name, params)
