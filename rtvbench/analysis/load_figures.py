"""What a load achieved, as the analysis keeps it (`Achieved`), and what each load kind says about
its own figures (`LoadFigures`): which counters of its records it carries, how they add up over
windows, when it achieved nothing, and the phrase the report writes beside a result.

Each load folder's achieved.py registers one LoadFigures in FIGURES; rtvbench.analysis.load_achieved
decodes the records with them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from rtvbench.registry import Registry
from rtvbench.spec import LoadSpec
from rtvbench.units import significant

FIGURES: Registry["LoadFigures"] = Registry("load kind")


@dataclass
class Achieved:
    load: str                               # the load's name (a part's name inside a combination)
    kind: str
    achieved_percent: float | None          # mean CPU share of the load's threads (100 = one CPU)
    per_cpu: dict[str, float] = field(default_factory=dict)    # "CPU 1" or "worker 0" -> % of that CPU
    pinned: bool = False
    workers: int | None = None
    bps: float | None = None
    ops_per_s: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    status: str | None = None               # the load's end status: "interrupted" is the normal stop
    n: int = 1                              # measurements averaged
    percent_values: list[float] = field(default_factory=list)   # achieved_percent of each measurement

    @property
    def nothing(self) -> bool:
        """The load did not do its work at all (0 B/s, no CPU, no fork): the measurement it ran beside
        was not under this load, whatever its name says."""
        figures = FIGURES.get(self.kind)
        return figures.nothing(self) if figures is not None else False

    def to_dict(self) -> dict[str, Any]:
        return {"load": self.load, "kind": self.kind, "achieved_nothing": self.nothing,
                "achieved_percent": self.achieved_percent,
                "per_cpu_percent": dict(self.per_cpu), "pinned": self.pinned, "workers": self.workers,
                "achieved_bps": self.bps, "achieved_ops_per_s": self.ops_per_s, "n": self.n,
                **{k: v for k, v in self.extra.items()}, "status": self.status}


def percent(v: float | None) -> str:
    return "n/a" if v is None else f"{significant(v)} %"


class LoadFigures:
    """A load kind's figures. The defaults suit a load that reports only a CPU share."""

    #: result-record counters and figures carried beside the common ones (docs/probe/load.md)
    extra: ClassVar[tuple[str, ...]] = ()
    #: window counters summed, and window figures taken from the last window, when a load died before
    #: printing its result and is described from its windows
    summed: ClassVar[tuple[str, ...]] = ()
    latest: ClassVar[tuple[str, ...]] = ()
    #: carried figures averaged over measurements by their largest value rather than their mean
    maxed: ClassVar[tuple[str, ...]] = ()
    #: meta.params the phrase quotes
    params: ClassVar[tuple[str, ...]] = ()
    #: meta.params carried as an extra figure (a limit the phrase and the CSV show)
    params_as_extra: ClassVar[tuple[str, ...]] = ()
    #: what the report says of a measurement under this load that has no record of it
    no_record: ClassVar[str] = "no record of what it achieved"

    def from_windows(self, windows: list[dict[str, Any]]) -> dict[str, Any]:
        """The kind's own counters of a result-like record made from the windows alone."""
        out: dict[str, Any] = {}
        for key in self.summed:
            vals = [w[key] for w in windows if isinstance(w.get(key), (int, float))]
            if vals:
                out[key] = sum(vals)
        for key in self.latest:
            if key in windows[-1]:
                out[key] = windows[-1][key]
        return out

    def nothing(self, a: Achieved) -> bool:
        """Whether the load did none of its work."""
        return False

    def definition(self, spec: LoadSpec) -> str:
        """What runs and where, as the report's table of loads says it."""
        shown = ", ".join(f"{k} = {v}" for k, v in spec.params.items() if v is not None)
        return (f"probe load generator `{spec.kind}`" + (f" ({shown})" if shown else "")
                + (f", running in environment `{spec.where}`" if spec.where != "same" else ""))

    def describe(self, a: Achieved, name: str) -> str:
        """One phrase, the way an evaluation report would write it (`name` already quoted or not)."""
        return f"{name}: {percent(a.achieved_percent)} of a CPU per thread"


def register(kind: str):
    """Class decorator: the figures of load kind `kind`."""
    def add(cls: type[LoadFigures]) -> type[LoadFigures]:
        FIGURES.register(kind)(cls())
        return cls
    return add
