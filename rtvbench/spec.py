"""The resolved campaign of a run: every environment, load and benchmark as validated, with
every default filled in, as plain typed data.

The campaign file says what its author wrote; this says what ran. It is built from the validated
campaign (rtvbench.campaign.reader.Campaign.spec), stored with the run (runs.spec, to_json) and read back
with it (rtvbench.results.CampaignRun.spec, from_json), so that analysis, preflight and report read
one value per parameter and never repeat a default of their own.

A leaf module: plain data, no import from the rest of rtvbench. Parameters are JSON values in
the order the kind's model declares them (sizes in bytes, a size sweep as the probe's "LO-HI",
CPU lists in the kernel's list syntax, lists for tuples).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

#: version of the JSON shape written by CampaignSpec.to_json; from_json refuses any other
SPEC_VERSION = 1


class SpecVersionError(ValueError):
    """A stored spec of a JSON shape this version of rtvbench does not read."""


@dataclass(frozen=True)
class EnvironmentSpec:
    name: str
    target: str                     # the target kind: "local", "ssh", "qemu" ...
    params: dict[str, Any]          # every key of the target kind, defaults filled, without `target`

    @property
    def guests(self) -> int:
        """How many guests the environment boots (a qemu environment's `count`); 1 for any other."""
        n = self.params.get("count", 1)
        return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else 1


@dataclass(frozen=True)
class LoadSpec:
    name: str
    # The load kind ("command", "combine", "cpu", "mem" ...), None for no load (`idle`, the empty table).
    kind: str | None
    # Every key of the kind, defaults filled, without `where` and without combine's list (`parts`).
    params: dict[str, Any]
    # Where it runs: "same" (the environment measured), "neighbours" (the other guests of a qemu
    # environment with count > 1) or an environment's name. "same" for no load and for a combination,
    # whose parts each run where their own `where` says.
    where: str = "same"
    parts: tuple[str, ...] = ()     # a combination's loads, in the campaign's order; () otherwise
    # What generates the load as the user would type it (a command load's command, `rtvb-probe load
    # ...` of a probe load); () for no load. The measurements store the same in load_commands.
    commands: tuple[str, ...] = ()

    @property
    def is_idle(self) -> bool:
        """No load: the baseline the other loads are compared with."""
        return self.kind is None


@dataclass(frozen=True)
class Placement:
    """Where a benchmark's measuring threads run, as its kind reads its own parameters: what
    preflight needs to tell a benchmark that shares its CPUs with a load from one that does not."""

    pinned: tuple[int, ...] | None = None   # CPUs it pins threads to; None: wherever the scheduler puts them
    threads: int = 1                        # measuring threads at once
    rt_priority: int | None = None          # its real-time priority, None at a normal policy
    realtime_option: bool = False           # whether the kind can be given a real-time policy
    unpinned_when_missing: bool = False     # a CPU it may not use: its threads run unpinned (else it fails)

    def to_json(self) -> dict[str, Any]:
        return {"pinned": None if self.pinned is None else list(self.pinned), "threads": self.threads,
                "rt_priority": self.rt_priority, "realtime_option": self.realtime_option,
                "unpinned_when_missing": self.unpinned_when_missing}

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> "Placement":
        d = d or {}
        pinned = d.get("pinned")
        return cls(None if pinned is None else tuple(pinned), d.get("threads", 1), d.get("rt_priority"),
                   bool(d.get("realtime_option")), bool(d.get("unpinned_when_missing")))


@dataclass(frozen=True)
class BenchmarkSpec:
    name: str
    kind: str                       # the benchmark kind (rtvbench/kinds/<kind>/)
    params: dict[str, Any]          # every key of the kind, defaults filled, without `kind`
    placement: Placement = field(default_factory=Placement)


@dataclass(frozen=True)
class CampaignSpec:
    name: str
    repetitions: int
    seed: int
    # name -> spec, in the order the campaign declares them (the first environment is the baseline)
    environments: dict[str, EnvironmentSpec]
    loads: dict[str, LoadSpec]
    benchmarks: dict[str, BenchmarkSpec]
    # Each [[requirements]] table as validated: its keys as written (an absent `environments` or
    # `loads` means all of them), in campaign order.
    requirements: list[dict[str, Any]] = field(default_factory=list)
    # "no measurable difference" means within this many percent (runs stored before it: 10)
    equivalence_percent: float = 10.0
    # `[conditions]` limits as validated ({} for runs stored before them: the defaults apply)
    conditions: dict[str, float] = field(default_factory=dict)
    # Each [[comparisons]] table as validated (an absent `loads`, `environments` or `benchmarks`
    # means all of them): compared beside the default comparisons.
    comparisons: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """A JSON value of this spec (sections as lists, so their order survives any store)."""
        return {
            "spec_version": SPEC_VERSION,
            "name": self.name,
            "repetitions": self.repetitions,
            "seed": self.seed,
            "environments": [{"name": e.name, "target": e.target, "params": copy.deepcopy(e.params)}
                             for e in self.environments.values()],
            "loads": [{"name": ld.name, "kind": ld.kind, "where": ld.where, "parts": list(ld.parts),
                       "commands": list(ld.commands), "params": copy.deepcopy(ld.params)}
                      for ld in self.loads.values()],
            "benchmarks": [{"name": b.name, "kind": b.kind, "params": copy.deepcopy(b.params),
                            "placement": b.placement.to_json()} for b in self.benchmarks.values()],
            "requirements": copy.deepcopy(list(self.requirements)),
            "equivalence_percent": self.equivalence_percent,
            "conditions": dict(self.conditions),
            "comparisons": copy.deepcopy(list(self.comparisons)),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "CampaignSpec":
        """The spec of a to_json value. Raises SpecVersionError for another shape's version."""
        version = data.get("spec_version") if isinstance(data, dict) else None
        if version != SPEC_VERSION:
            raise SpecVersionError(f"campaign spec version {version!r} is not {SPEC_VERSION}, the one this "
                                   "version of rtvbench reads")
        data = copy.deepcopy(data)
        return cls(
            name=data["name"], repetitions=data["repetitions"], seed=data["seed"],
            environments={e["name"]: EnvironmentSpec(e["name"], e["target"], e["params"])
                          for e in data["environments"]},
            loads={ld["name"]: LoadSpec(ld["name"], ld["kind"], ld["params"], ld["where"],
                                        tuple(ld["parts"]), tuple(ld["commands"]))
                   for ld in data["loads"]},
            benchmarks={b["name"]: BenchmarkSpec(b["name"], b["kind"], b["params"],
                                                 Placement.from_json(b.get("placement")))
                        for b in data["benchmarks"]},
            requirements=data["requirements"],
            equivalence_percent=float(data.get("equivalence_percent", 10.0)),
            conditions=dict(data.get("conditions") or {}),
            comparisons=list(data.get("comparisons") or []))
