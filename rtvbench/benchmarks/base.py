"""What every benchmark kind provides, and the registry of kinds.

A benchmark kind is one module in this package: a pydantic model of its campaign
keys and the translation of those keys into a probe command line. The runner and
the campaign loader only talk to this interface.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from rtvbench.params import StrictModel
from rtvbench.registry import Registry
from rtvbench.spec import Placement
from rtvbench.targets.capabilities import Capability, ProbeSubset

#: The probe's watchdog: a measurement still running WATCHDOG_FACTOR times its expected_seconds()
#: (times its target's slowdown(): an emulated guest) plus WATCHDOG_MARGIN_S after it started is
#: stopped with its process group (targets.base.Deadline) and fails. expected_seconds() is an
#: estimate made on real hardware; the margin covers a loaded machine, and start-up and clean-up
#: that no estimate counts.
WATCHDOG_FACTOR = 10.0
WATCHDOG_MARGIN_S = 120.0
#: once the probe printed its `end` record, the time it has left to exit
AFTER_END_S = 15.0

# Every designed kind is implemented; a kind planned later goes into `planned`.
BENCHMARKS: Registry[type["Benchmark"]] = Registry("benchmark kind", planned=())


class Benchmark(ABC):
    kind: ClassVar[str]
    Params: ClassVar[type[StrictModel]]     # the campaign keys, without `kind`
    #: False for a kind that runs a program of its own instead of the probe; such a kind also has
    #: output_path(private_dir), command_argv(output), read_output(target, path) and parse(text), which
    #: the runner calls instead, and max_stdout_bytes, the most of that program's stdout the runner
    #: keeps before it fails the measurement
    runs_probe: ClassVar[bool] = True
    #: formats of results made elsewhere that `rtvbench import` stores as a run of this kind; such a
    #: kind also has the classmethods import_keys(fmt, record) (its campaign keys, from the parsed record) and
    #: parse_import(fmt, text) (the stored `result` record), which runner/importer.py calls
    import_formats: ClassVar[tuple[str, ...]] = ()
    #: the probe option each campaign key becomes, so that validate can name the keys an environment
    #: whose probe takes only some options (capabilities.ProbeSubset) cannot honour
    key_options: ClassVar[dict[str, str]] = {}
    #: the options of this kind that the freestanding probe (probe/core/ without an OS: the bare-metal
    #: image) takes, or None where it does not run the kind
    freestanding_options: ClassVar[tuple[str, ...] | None] = None

    def __init__(self, name: str, params: StrictModel) -> None:
        self.name = name
        self.params = params

    @property
    def peer(self) -> str | None:
        """The environment the far end of the measurement runs in (ipc round trips between two
        environments), or None: the whole measurement runs in the measured environment. A benchmark
        with a peer also has check_reachable(environments) and start_server(sites, measured)."""
        return None

    def figure_problem(self, figure: str) -> str | None:
        """Why this benchmark, as configured, can never yield `figure` (a figure of its kind), or None;
        a requirement on such a figure would be INCONCLUSIVE forever."""
        return None

    def placement(self) -> Placement:
        """Where its measuring threads run (pinned CPUs, threads, real-time priority), for preflight;
        by default one thread wherever the scheduler puts it."""
        return Placement()

    #: what it needs of every environment it measures (targets/capabilities.py); validate refuses an
    #: environment without it
    requires: ClassVar[tuple[type[Capability], ...]] = ()

    def campaign_problems(self, environments: dict, loads: dict) -> list[tuple[tuple, str]]:
        """What in the rest of the campaign this benchmark cannot run with, for `validate`: (key path,
        sentence) pairs. `environments` and `loads` map names to targets and loads (None: invalid)."""
        return []

    def execute(self, target, argv: list[str], on_line, deadline=None):
        """Run one measurement in `target` (the probe command `argv`), each output line to on_line,
        stopped at `deadline` (a targets.base.Deadline) if it still runs then; a targets.base.Completed.
        Kinds that measure more than a probe command override it."""
        if isinstance(target, ProbeSubset):
            argv = self.freestanding_argv(argv)
        return target.run(argv, on_line, deadline)

    def freestanding_problems(self, area_bytes: int) -> list[tuple[str, str]]:
        """(key, why) for each value the freestanding probe cannot take under a key it does take (a
        range where it takes a list, a size beyond the `area_bytes` of memory it measures in), for
        validate."""
        return []

    def freestanding_argv(self, argv: list[str]) -> list[str]:
        """The probe command `argv` as the freestanding probe takes it: the probe, the subcommand, and the
        options of freestanding_options, each with its value. Validate has refused every key it cannot
        honour, so what is left out is a default of the Linux probe's (a policy, a priority, a mode)."""
        accepted = self.freestanding_options or ()
        out, i = argv[:2], 2
        while i < len(argv):
            if argv[i] in accepted and i + 1 < len(argv):
                out += argv[i:i + 2]
            i += 2
        return out

    def deadline_s(self, slowdown: float = 1.0) -> float:
        """How long after its start a measurement is stopped by the watchdog, in a target that runs
        workloads `slowdown` times slower than real hardware (Target.slowdown())."""
        return WATCHDOG_FACTOR * self.expected_seconds() * slowdown + WATCHDOG_MARGIN_S

    @abstractmethod
    def probe_args(self) -> list[str]:
        """The probe command line after the binary: the subcommand and its options."""

    @abstractmethod
    def expected_seconds(self) -> float:
        """How long one measurement should take, for the progress bar's ETA and the watchdog
        (deadline_s)."""
