"""What every load kind provides, and the registry of load kinds.

A load runs during a measurement and is stopped after it. Each kind is one module:
a pydantic model of its campaign keys and how to start it on a target.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from rtvbench.params import StrictModel
from rtvbench.registry import Registry
from rtvbench.targets.base import Background, Target

# Probe load generators of DESIGN.md that later issues implement.
LOADS: Registry[type["Load"]] = Registry(
    "load kind", planned=("cpu", "memory", "membw", "cache", "io", "fork", "leak"))


def kind_of(table: dict[str, Any]) -> Any:
    """A load table's kind: explicit `kind`, else `command` when a command is given,
    else `idle` (the empty table means "no load")."""
    if "kind" in table:
        return table["kind"]
    return "command" if "command" in table else "idle"


class Load(ABC):
    kind: ClassVar[str]
    Params: ClassVar[type[StrictModel]]     # campaign keys, without `kind`

    def __init__(self, name: str, params: StrictModel) -> None:
        self.name = name
        self.params = params

    @property
    def where(self) -> str:
        """"same": the environment being measured; else another environment's name."""
        return getattr(self.params, "where", "same")

    @abstractmethod
    def commands(self) -> list[str]:
        """What generates the load, as the user would type it (stored, reported)."""

    @abstractmethod
    def start(self, target: Target) -> Background | None:
        """Start the load on target and return once it is in effect (None: no load).
        Raises LoadError when it cannot be started."""


class LoadError(Exception):
    """A load could not start or ended before the measurement did."""
