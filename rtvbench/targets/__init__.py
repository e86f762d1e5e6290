"""Targets: how environments are reached. Each kind is one module registered in TARGETS.

A target's module is imported when a campaign first names its kind (every one's for a name none has,
or for the list of names): `validate` of a local campaign then builds the local target's model only,
not the ssh, qemu and labgrid ones with everything they import."""

from rtvbench.targets.base import TARGETS, Background, Completed, Target


def _find(name: str | None) -> None:
    """Import the module that registers target `name`, or every target's for None or a name none has."""
    known = name in ("local", "ssh", "qemu", "labgrid")
    if name == "local" or not known:
        from rtvbench.targets import local  # noqa: F401  (registers "local")
    if name == "ssh" or not known:
        from rtvbench.targets import ssh  # noqa: F401  (registers "ssh")
    if name == "qemu" or not known:
        from rtvbench.targets import qemu  # noqa: F401  (registers "qemu")
    if name == "labgrid" or not known:
        from rtvbench.targets import labgrid_place  # noqa: F401  (registers "labgrid")


TARGETS.finder = _find

__all__ = ["TARGETS", "Background", "Completed", "Target"]
