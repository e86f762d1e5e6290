"""What a `disrupt` load achieved: how many times it restarted a guest during the measurement, and
each of those events as its records say (rtvbench/run_analyses/disruption reads the victim around
them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rtvbench.analysis.load_figures import Achieved, LoadFigures, register
from rtvbench.records import as_int, as_number, as_text
from rtvbench.results import Measurement
from rtvbench.spec import LoadSpec


@register("disrupt")
class DisruptFigures(LoadFigures):
    extra = ("events",)

    def nothing(self, a: Achieved) -> bool:
        return not a.extra.get("events")

    def definition(self, spec: LoadSpec) -> str:
        # Nothing runs in a guest: a thread of the runner power-cycles the measured environment's
        # other guests (validation refuses any other `where`).
        p = spec.params
        action = "killed and booted again" if p.get("action") == "kill" else "rebooted"
        every = p.get("every_s")
        return (f"rtvbench itself: each of the other guests of the measured environment {action}"
                + (f" every {every:g} s" if isinstance(every, (int, float)) else "")
                + " during the measurement, from a thread of the runner (nothing runs in a guest)")

    def describe(self, a: Achieved, name: str) -> str:
        n = a.extra.get("events") or 0
        return f"{name}: {n:,.0f} guest {'restarts' if n != 1 else 'restart'} during the measurement"


@dataclass(frozen=True)
class DisruptEvent:
    """One event of a disrupt load (a neighbour guest rebooted, or killed and booted again): its
    `window` record of kind `disrupt`, timed from the load's start."""

    index: int
    t_start_ns: int
    t_end_ns: int
    action: str                          # what was done to the guest; "?" when not said
    boot_ns: float | None                # the guest's boot, QEMU start to its probe's ready

    @classmethod
    def of(cls, r: dict[str, Any]) -> DisruptEvent | None:
        """The event of a load record; None for any other record."""
        if r.get("type") != "window" or r.get("kind") != "disrupt":
            return None
        return cls(as_int(r.get("index")) or 0, as_int(r.get("t_start_ns")) or 0, as_int(r.get("t_end_ns")) or 0,
                   as_text(r.get("action")) or "?", as_number(r.get("boot_ns")))


def events(m: Measurement) -> list[tuple[str, DisruptEvent]]:
    """(the load's records' name, event) of every disrupt load's event during the measurement."""
    return [(name, e) for name, records in m.load_records.items() for r in records
            if (e := DisruptEvent.of(r)) is not None]


def ran_beside(m: Measurement) -> bool:
    """Whether a disrupt load ran beside the measurement (its meta record arrived), with events or none."""
    return any(r.get("type") == "meta" and r.get("subcommand") == "disrupt"
               for records in m.load_records.values() for r in records)
