"""Thermal, frequency and throttling samples beside a measurement: `rtvb-probe sample` in the
measured environment, one sample right before the probe, one every SAMPLE_INTERVAL_MS and one
right after it (docs/architecture.md, "Thermal and frequency state").

Where the target can write to a background command's stdin (targets.capabilities.FeedsBackground),
one sampler serves the environment for the whole run and samples when asked (StandingSampler): a
line on a pipe before and after each measurement. Elsewhere a sampler is started like a load right
before the probe and stopped right after it (ThermalSampler). On a busy machine the start of a
process costs a handful of scheduler hand-offs, about 12 ms before every measurement beside two
CPU hogs on two cores, where a request and its answer cost one each way.

The sampler runs on the target, wherever the target is (this machine, an ssh board, a guest), as one
process that wakes every SAMPLE_INTERVAL_MS and reads a few sysfs files, rather than the host reading
each file through the target (a command per file over ssh or the guest agent). It is an addition
to the measurement, never a condition of it: a probe without `sample`, a sampler that fails or
prints nonsense, a target with no such files all leave the measurement without thermal data.

RTVBENCH_SYSFS_ROOT (tests only): a directory the sampler reads instead of / (its hidden `--root`),
so that a test can rewrite a fake /sys tree during a measurement.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from rtvbench.errors import ProbeOutputError, TargetError
from rtvbench.probe.stream import ProbeStream
from rtvbench.targets import Background
from rtvbench.targets.base import FedBackground
from rtvbench.targets.capabilities import FeedsBackground

SAMPLE_INTERVAL_MS = 500
START_TIMEOUT_S = 5.0           # for its first sample, the "before" one
ANSWER_TIMEOUT_S = 5.0          # for the sample a standing sampler was asked for
ROOT_ENV = "RTVBENCH_SYSFS_ROOT"


def sampler_argv(probe: str, *options: str) -> list[str]:
    argv = [probe, "sample", *options, "--interval-ms", str(SAMPLE_INTERVAL_MS)]
    root = os.environ.get(ROOT_ENV)
    return argv + ["--root", root] if root else argv


class ThermalSampler:
    def __init__(self, target: Any, probe: str) -> None:
        self.target, self.probe = target, probe
        self.samples: list[dict] = []
        self.bg: Background | None = None
        self._stream = ProbeStream("output of `rtvb-probe sample`")
        self._first = threading.Event()
        self._broken = False
        self._started = 0.0

    def argv(self) -> list[str]:
        return sampler_argv(self.probe)

    def _on_line(self, line: str) -> None:
        if self._broken:
            return
        try:
            record = self._stream.feed(line)
        except ProbeOutputError:
            self._broken = True          # what came before stays; the rest is not trusted
            self._first.set()
            return
        if record["type"] == "sample":
            self.samples.append(record)
        if record["type"] in ("sample", "end"):
            self._first.set()

    def start(self) -> None:
        """Start it; wait_first() waits for its first sample."""
        try:
            # One process of the probe's: it needs none of what stops the processes a load leaves.
            self.bg = self.target.start_background(self.argv(), self._on_line, alone=True)
        except (TargetError, OSError):
            self.bg = None
        self._started = time.monotonic()

    def wait_first(self) -> None:
        """Wait for its first sample (or its end, or START_TIMEOUT_S from its start)."""
        if self.bg is None:
            return
        while not self._first.wait(0.002):
            if self.bg.poll() is not None or time.monotonic() - self._started > START_TIMEOUT_S:
                break

    def stop(self) -> list[dict]:
        """Stop it (its last sample is the "after" one); the samples taken."""
        self.bg = _stopped(self.bg)
        return self.samples

    def begin(self) -> None:
        """Right before a measurement: start it and wait for its first sample."""
        self.start()
        self.wait_first()

    def end(self) -> list[dict]:
        """Right after it: stop it; the samples taken. Idempotent."""
        return self.stop()

    def stored(self) -> dict | None:
        """What the store keeps: None when nothing was sampled."""
        return stored(self.samples)


def _stopped(bg: Background | None) -> None:
    """Stop a sampler's process, if there is one; None, what its holder keeps then."""
    if bg is not None:
        try:
            bg.stop()
        except TargetError:
            pass                        # the target went away: the measurement says so
    return None


def stored(samples: list[dict]) -> dict | None:
    return {"interval_ms": SAMPLE_INTERVAL_MS, "samples": samples} if samples else None


class StandingSampler:
    """`rtvb-probe sample --requests` in one environment for a whole run: begin() asks for the
    sample before a measurement and waits for it, end() for the one after; between the two it samples
    every SAMPLE_INTERVAL_MS by itself, and outside them not at all. Each measurement's samples read
    as a sampler's of its own would (seq and t_ns from its "begin" sample, which carries the zones
    and cooling devices). A sampler that fails, or does not answer within ANSWER_TIMEOUT_S, leaves
    that measurement without thermal data, and the next begin() starts another; one whose first
    process ended unanswered is `refused`."""

    def __init__(self, target: FeedsBackground, probe: str) -> None:
        self.target, self.probe = target, probe
        self.bg: FedBackground | None = None
        self.samples: list[dict] = []
        self._stream = ProbeStream("output of `rtvb-probe sample --requests`")
        self._asked: str | None = None          # the request whose answer is awaited
        self._answered = threading.Event()
        self._collecting = False
        self._lock = threading.Lock()
        self._answered_once = False
        #: its first process ended without answering: a probe without --requests (RTVBENCH_PROBE naming
        #: an older build); the measurements get a sampler each instead
        self.refused = False

    def _on_line(self, line: str) -> None:
        try:
            record = self._stream.feed(line)
        except ProbeOutputError:
            record = {"type": "end"}            # nothing more from it is trusted
        with self._lock:
            if record["type"] == "end":
                self._collecting = False
                self._answered.set()            # no answer will come
                return
            if record["type"] != "sample":
                return
            request = record.get("request")
            if request == "begin":
                # Whatever came before it (a late sample of the pace) belongs to no measurement.
                self.samples, self._collecting = [], True
            if self._collecting:
                self.samples.append(record)
            if request is not None and request == self._asked:
                self._collecting = request == "begin"
                self._answered_once = True
                self._answered.set()

    def _ask(self, request: str) -> bool:
        """Send `request` and wait for its sample; False when none came."""
        if self.bg is None or self.bg.poll() is not None:
            return False
        self._answered.clear()
        with self._lock:
            self._asked = request
        try:
            self.bg.send(request)
        except TargetError:
            return False
        # Event.wait returns as the reader sets it; the slices only see a sampler that ended unanswered.
        deadline = time.monotonic() + ANSWER_TIMEOUT_S
        while not (answered := self._answered.wait(0.05)):
            if self.bg.poll() is not None or time.monotonic() > deadline:
                break
        with self._lock:
            self._asked = None
            return answered and bool(self.samples) and self.samples[-1].get("request") == request

    def begin(self) -> None:
        """Right before a measurement: its first sample (started first, if it is not running)."""
        with self._lock:
            self.samples, self._collecting = [], False
        if self.bg is not None and self.bg.poll() is not None:
            self.close()                        # it ended: another one
        if self.bg is None:
            self._stream = ProbeStream("output of `rtvb-probe sample --requests`")
            try:
                self.bg = self.target.start_fed_background(sampler_argv(self.probe, "--requests"), self._on_line)
            except (TargetError, OSError):
                return
        if not self._ask("begin"):
            self.refused = not self._answered_once and self.bg.poll() is not None
            self.close()

    def end(self) -> list[dict]:
        """Right after it: its last sample; the measurement's samples (none when begin() got none).
        Idempotent until the next begin()."""
        with self._lock:
            collecting = self._collecting
        if collecting and not self._ask("end"):
            self.close()
            with self._lock:
                self.samples = []               # no "after" sample: the window is not whole
        with self._lock:
            self._collecting = False
            return list(self.samples)

    def stored(self) -> dict | None:
        with self._lock:
            return stored(self.samples)

    def close(self) -> None:
        """Stop it (the end of its stdin); idempotent."""
        self.bg = _stopped(self.bg)


class Samplers:
    """The thermal samplers of a run, one standing sampler per environment whose target can feed
    one, else a fresh sampler for each measurement."""

    def __init__(self) -> None:
        self._standing: dict[str, StandingSampler] = {}

    def for_measurement(self, environment: str, target: Any, probe: str) -> ThermalSampler | StandingSampler:
        standing = self._standing.get(environment)
        if not isinstance(target, FeedsBackground) or (standing is not None and standing.refused):
            return ThermalSampler(target, probe)
        if standing is None or standing.target is not target or standing.probe != probe:
            if standing is not None:
                standing.close()
            standing = self._standing[environment] = StandingSampler(target, probe)
        return standing

    def close(self) -> None:
        for standing in self._standing.values():
            standing.close()
        self._standing.clear()
