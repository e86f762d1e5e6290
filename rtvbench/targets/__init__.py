"""Targets: how environments are reached. Each kind is one module registered in TARGETS."""

from rtvbench.targets.base import TARGETS, Background, Completed, Target
from rtvbench.targets import local  # noqa: F401  (registers "local")
from rtvbench.targets import ssh  # noqa: F401  (registers "ssh")
from rtvbench.targets import qemu  # noqa: F401  (registers "qemu")
from rtvbench.targets import labgrid_place  # noqa: F401  (registers "labgrid")

__all__ = ["TARGETS", "Background", "Completed", "Target"]
