"""Load kinds. Each kind is one module that registers itself in LOADS."""

from rtvbench.loads.base import LOADS, Load, LoadError, kind_of
from rtvbench.loads import command, idle  # noqa: F401  (register "command", "idle")

__all__ = ["LOADS", "Load", "LoadError", "kind_of"]
