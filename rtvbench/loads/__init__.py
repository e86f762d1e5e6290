"""Load kinds. Each kind is one module that registers itself in LOADS."""

from rtvbench.loads.base import LOADS, Load, LoadContext, LoadError, LoadSite, kind_of
# Each import registers its kinds: "command", "idle", "combine", "disrupt", and the probe's generators.
from rtvbench.loads import combine, command, disrupt, idle, probe_load  # noqa: F401

__all__ = ["LOADS", "Load", "LoadContext", "LoadError", "LoadSite", "kind_of"]
