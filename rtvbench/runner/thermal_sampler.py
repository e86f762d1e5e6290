"""Thermal, frequency and throttling samples beside a measurement: `rtvb-probe sample` in the
measured environment, started like a load right before the probe and stopped right after it
(docs/architecture.md, "Thermal and frequency state").

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

SAMPLE_INTERVAL_MS = 500
START_TIMEOUT_S = 5.0           # for its first sample, the "before" one
ROOT_ENV = "RTVBENCH_SYSFS_ROOT"


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
        argv = [self.probe, "sample", "--interval-ms", str(SAMPLE_INTERVAL_MS)]
        root = os.environ.get(ROOT_ENV)
        return argv + ["--root", root] if root else argv

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
        if self.bg is not None:
            try:
                self.bg.stop()
            except TargetError:
                pass                     # the target went away: the measurement says so
            self.bg = None
        return self.samples

    def stored(self) -> dict | None:
        """What the store keeps: None when nothing was sampled."""
        return {"interval_ms": SAMPLE_INTERVAL_MS, "samples": self.samples} if self.samples else None
