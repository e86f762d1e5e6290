"""What every load kind provides, and the registry of load kinds.

A load runs during a measurement and is stopped after it. Each kind is one module:
a pydantic model of its campaign keys and how to launch it. Where it runs is not the
load's business: the runner hands it a LoadContext that maps `where` to the target
(and probe) of an environment, so a load in a neighbouring environment starts the
same way as one in the measured environment, whatever the targets are.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Annotated, Any, Callable, ClassVar

from pydantic import AfterValidator

from rtvbench.loads import load as load_folders
from rtvbench.params import Number, StrictModel
from rtvbench.registry import Registry
from rtvbench.targets.base import Background, Target
from rtvbench.targets.capabilities import Capability


def _find(kind: str | None) -> None:
    load_folders("params", kind)


#: every load folder's params.py registers its kind here, imported when the kind is first asked for
LOADS: Registry[type["Load"]] = Registry("load kind", finder=_find)

#: `where` value of a load that runs in every other guest of the measured environment
NEIGHBOURS = "neighbours"


def _settle(v: float) -> float:
    if not 0 <= v <= 60:
        raise ValueError("must be from 0 to 60 seconds")
    return v


#: `settle_s`: the time a load gets to reach full strength before the measurement
SettleS = Annotated[Number, AfterValidator(_settle)]


def kind_of(table: dict[str, Any]) -> Any:
    """A load table's kind: explicit `kind`, else `command` when a command is given, else
    `combine` for several loads at once, else `idle` (the empty table means "no load")."""
    if "kind" in table:
        return table["kind"]
    if "command" in table:
        return "command"
    return "combine" if "combine" in table else "idle"


@dataclass(frozen=True)
class LoadSite:
    """An environment a load can run in: its target and the path of the probe there."""

    environment: str
    target: Target
    probe: str


#: (load name, line number in its output, parsed record): where a probe load's records go
RecordSink = Callable[[str, int, dict[str, Any]], None]


@dataclass
class LoadContext:
    """What a load needs to start for one measurement."""

    measured: str                       # the environment being measured
    sites: dict[str, LoadSite]          # every environment of the campaign
    on_record: RecordSink | None = None
    # The other guests of the measured environment (a qemu environment with count = N boots N
    # guests; the first is measured): where a `where = "neighbours"` load runs, one per guest.
    neighbours: list[LoadSite] = field(default_factory=list)

    def site(self, where: str) -> LoadSite:
        return self.sites[self.measured if where in ("same", NEIGHBOURS) else where]

    def at_neighbour(self, site: LoadSite) -> "LoadContext":
        """The context a load sees in one neighbour: that guest as its "same" environment, and
        its records stored under `<load>@<guest>` so every neighbour's figures stay apart."""
        sink = self.on_record
        renamed = None if sink is None else (
            lambda name, seq, record: sink(f"{name}@{site.environment}", seq, record))
        return LoadContext(site.environment, {site.environment: site}, renamed)


class Load(ABC):
    kind: ClassVar[str]
    Params: ClassVar[type[StrictModel]]     # campaign keys, without `kind`
    #: what it needs of the environment(s) it runs in (targets/capabilities.py): the disrupt load
    #: power-cycles the guests `where` names; validate refuses an environment without it
    requires: ClassVar[tuple[type[Capability], ...]] = ()

    def __init__(self, name: str, params: StrictModel) -> None:
        self.name = name
        self.params = params

    @property
    def where(self) -> str:
        """"same": the environment being measured; else another environment's name."""
        return getattr(self.params, "where", "same")

    @property
    def settle_s(self) -> float:
        """Time the load gets after launch to reach full strength before the measurement."""
        return float(getattr(self.params, "settle_s", 0.0))

    @abstractmethod
    def commands(self) -> list[str]:
        """What generates the load, as the user would type it (stored, reported)."""

    @abstractmethod
    def launch(self, ctx: LoadContext) -> Background | None:
        """Start the load's processes (None: no load) without waiting for it to settle.
        Raises LoadError when it cannot be started."""

    def check_running(self, bg: Background) -> None:
        """Raise LoadError if the load has already ended (after settling)."""
        status = bg.poll()
        if status is not None:
            raise LoadError(f'load "{self.name}" ({"; ".join(self.commands())}) exited with status '
                            f"{status} right after it started: {bg.output_tail() or 'no output'}")

    def check_started(self, bg: Background) -> None:
        """check_running on what launch_everywhere started: each neighbour's instance alone."""
        if self.where == NEIGHBOURS and isinstance(bg, BackgroundGroup):
            for _, one in bg.parts:
                self.check_running(one)
        else:
            self.check_running(bg)

    def start(self, ctx: LoadContext) -> Background | None:
        """Start the load and return once it is in effect (None: no load)."""
        bg = self.launch_everywhere(ctx)
        if bg is None:
            return None
        try:
            time.sleep(self.settle_s)
            self.check_started(bg)
        except BaseException:           # Ctrl-C while settling: the caller never sees bg
            bg.stop()
            raise
        return bg


    def launch_everywhere(self, ctx: LoadContext) -> Background | None:
        """launch() where `where` says; in every neighbour guest for "neighbours" (in none when
        the measured environment is a single guest: the 1-VM point of a 1..N VM study)."""
        if self.where != NEIGHBOURS:
            return self.launch(ctx)
        started: list[tuple[Load, Background]] = []
        try:
            for site in ctx.neighbours:
                bg = self.launch(ctx.at_neighbour(site))
                if bg is not None:
                    started.append((self, bg))
        except BaseException:
            BackgroundGroup(started).stop()     # what already runs must not outlive the failure
            raise
        return BackgroundGroup(started) if started else None


class BackgroundGroup(Background):
    """Several loads started together (a combined load), stopped together."""

    def __init__(self, parts: list[tuple[Load, Background]]) -> None:
        self.parts = parts
        self.argv = [a for _, bg in parts for a in bg.argv]

    def poll(self) -> int | None:
        for _, bg in self.parts:
            status = bg.poll()
            if status is not None:
                return status
        return None

    def stop(self) -> None:
        # Every part is stopped even when one of them fails to stop (the first error wins).
        error: BaseException | None = None
        for _, bg in reversed(self.parts):
            try:
                bg.stop()
            except BaseException as e:      # noqa: BLE001
                error = error or e
        if error is not None:
            raise error

    def output_tail(self) -> str:
        ended = [(load, bg) for load, bg in self.parts if bg.poll() is not None] or self.parts
        return " / ".join(f'{load.name}: {bg.output_tail() or "no output"}' for load, bg in ended)

    def failure(self) -> str | None:
        problems = [f'{load.name}: {bg.failure()}' for load, bg in self.parts if bg.failure()]
        return " / ".join(problems) or None


class LoadError(Exception):
    """A load could not start or ended before the measurement did."""
