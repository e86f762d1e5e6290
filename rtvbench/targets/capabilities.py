"""What a target can do beyond running commands, one small interface each.

Every target runs a command and streams its lines, starts one in the background, reads a file,
deploys the probe and describes itself (targets/base.py). The rest only some can; a target says so
by implementing the capability's interface, and what needs a capability asks for it by interface,
never by the target's kind:

  PowerCycling    switch the environment off and on again (the `boot` kind, the `disrupt` load)
  ProcessListing  every process's CPU time, marked when rtvbench started it (the conditions)
  HostCost        what the environment costs this machine (a qemu environment's guests)
  Pausing         stop taking this machine's CPU while other environments are measured
  OwnedKernel     take over what is the whole machine's elsewhere (the top-level tracing instance)
  FeedsBackground start a background command and write lines to its stdin (the thermal sampler that
                  stays up for a whole run and samples when asked)

One interface says the opposite, what an environment lacks that every other has:

  ProbeSubset     it runs only the benchmark kinds the freestanding probe serves, with their options
                  that it takes, and no program, file read or load of its own (a bare-metal image)

A benchmark kind or a load names what it needs in `requires`, and the campaign check refuses an
environment that lacks it (missing()), in the capability's own words, before anything runs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable, ClassVar


class Capability(ABC):
    #: what it lets rtvbench do to an environment, as validation says it ("power-cycle")
    verb: ClassVar[str]
    #: which environments have it, as validation advises
    advice: ClassVar[str]

    def capability_problem(self, capability: type[Capability]) -> str | None:
        """Why this environment lacks `capability` although its kind has it, as "is <this>"
        ("a ssh target without reboot_command"), or None: it has it."""
        return None


class PowerCycling(Capability):
    verb = "power-cycle"
    advice = "qemu environments, ssh ones with a reboot_command, or labgrid ones reached over ssh"

    @abstractmethod
    def power_cycle(self, hard: bool = False) -> dict[str, float]:
        """Switch the environment off (`hard`: as a crash would, without asking it) and on again,
        wait until its probe answers, and return the boot's phases in ns (`total_ns` at least).
        Raises TargetError where it cannot."""


class ProcessListing(Capability):
    verb = "list the processes of"
    advice = "local, ssh and labgrid environments"

    @abstractmethod
    def process_ticks(self) -> dict[str, list] | None:
        """CPU time of every process: pid -> [name, ticks (user + system, USER_HZ), CPU it last ran
        on, 1 if rtvbench started it (or is it), else 0]; None when the list cannot be read now.
        Without it the measurement conditions say how much other processes took, not which ones,
        and cannot judge them under a load."""


class HostCost(Capability):
    verb = "tell the cost to this machine of"
    advice = "qemu environments"

    @abstractmethod
    def host_usage(self) -> dict[str, Any] | None:
        """What the environment costs the machine rtvbench runs on (the guests it boots: CPU time of
        their vCPU threads and of the rest of QEMU, memory), or None when it cannot be read now."""


class Pausing(Capability):
    verb = "pause"
    advice = "qemu environments"

    @abstractmethod
    def pause(self) -> None:
        """Stop taking the host's CPU while other environments are measured (a guest's vCPUs are
        paused), so that an idle guest does not disturb a native measurement; idempotent."""

    @abstractmethod
    def resume(self) -> None:
        """Undo pause(); idempotent. The runner calls it before the target is used again."""


class OwnedKernel(Capability):
    """The environment's kernel runs for rtvbench alone (a guest it booted for itself): a measurement may
    take over what belongs to the whole machine, such as the top-level tracing instance, which on any
    other machine is its users' tracing session."""
    verb = "take over the kernel's tracing of"
    advice = "qemu environments"


class FeedsBackground(ABC):
    """The target starts a background command whose stdin rtvbench writes to, without a process or
    command on the target per line. Nothing requires it: without it the thermal sampler is a
    process per measurement (runner/thermal_sampler.py)."""

    @abstractmethod
    def start_fed_background(self, argv: list[str], on_line: Callable[[str], None]) -> Any:
        """Start argv as start_background(argv, on_line, alone=True) does, its stdin a pipe that
        send() writes to and stop() closes: a targets.base.FedBackground (not imported here: base
        imports this module)."""


class ProbeSubset(ABC):
    """An environment whose probe is all there is (the bare-metal image, probe/core/ without an OS): no
    programs, files or loads. Of the benchmark kinds it runs those whose `freestanding_options` name the
    options it takes, and gets only those (Benchmark.execute); the campaign check refuses the rest in
    the words of describe_self()."""

    @abstractmethod
    def describe_self(self) -> str:
        """What the environment is, as a sentence names it ("a bare-metal image")."""

    @abstractmethod
    def memory_area_bytes(self) -> int:
        """The bytes of the area its memory kinds (mem-lat, mem-bw) measure in."""


def missing(target: Any, capability: type[Capability]) -> str | None:
    """Why `target` lacks `capability`, as "is <this>" says it ("a local target"), or None."""
    if not isinstance(target, capability):
        return f"a {target.kind} target"
    return target.capability_problem(capability)


def process_ticks(target: Any) -> dict[str, list] | None:
    """The target's process list (ProcessListing), or None where it has none."""
    return target.process_ticks() if isinstance(target, ProcessListing) else None


def host_usage(target: Any) -> dict[str, Any] | None:
    """What the target costs this machine (HostCost), or None where that is nothing rtvbench sees."""
    return target.host_usage() if isinstance(target, HostCost) else None
