"""What the probe's load generators share as campaign loads (docs/probe/load.md): the common keys,
and starting and reading `rtvb-probe load --kind KIND`. Each generator is a load folder whose
params.py declares its own keys and calls `register`.

Each kind maps its campaign keys to `rtvb-probe load --kind KIND ...` and runs like a command
load (started before each measurement under the target's supervisor, whole process group
stopped after it), with one difference: its JSON Lines output is read as it arrives and every
record is handed to the runner, which stores it as the load's records of that measurement.
That is where the report's "cpu50 held 49.6 % on 2 CPUs" comes from.

The keys are checked here with the probe's own ranges and rules (an option that does not
belong to the kind is an unknown key), so that a campaign mistake is a `file:line: key`
message before anything runs rather than an exit code 2 of every measurement.
"""

from __future__ import annotations

import shlex
import threading
import time
from typing import Any, Callable, ClassVar, Literal

from pydantic import model_validator

from rtvbench.cpulist import probe_cpus
from rtvbench.loads.base import LOADS, Load, LoadContext, LoadError, LoadSite, SettleS
from rtvbench.params import (Name, StrictModel, number_arg, probe_int, probe_number,
                             probe_size)
from rtvbench.probe.stream import ProbeStream
from rtvbench.targets.base import Background

#: how long a load may take to print its `meta` record (a static binary starts in milliseconds;
#: a slow target link is the only reason to wait longer)
START_TIMEOUT_S = 10.0
#: how long its workers may then take to prepare (prefaulting the largest buffer, 16 GiB, at a slow
#: board's 1 GB/s)
PREPARE_TIMEOUT_S = 30.0

K, M, G = 1 << 10, 1 << 20, 1 << 30
MAX_BUFFER = 16 * G          # the probe's MEM_MAX_BYTES on 64-bit targets


# The probe's ranges (docs/probe/load.md); module level: pydantic reads annotations by name.
Workers = probe_int("workers", 1, 256)
Cpus = probe_cpus("cpus", 1024)
Priority = probe_int("priority", 1, 99)
Nice = probe_int("nice", -20, 19)
WindowS = probe_number("window-s", 0.01, 1e6, "a number of seconds", zero_ok=True)
BpsLimit = probe_size("bps-limit", 0, 1 << 40)
BlockSize = probe_size("block-size", 512, 64 * M)


class ProbeLoadParams(StrictModel):
    """Keys every probe load kind takes (docs/probe/load.md, "Common options")."""

    where: Name = "same"
    # Counted from the probe's `started` record, printed once every worker has prepared (buffers
    # prefaulted, work calibrated): a probe load is at full strength from there.
    settle_s: SettleS = 0.0
    window_s: WindowS = 0.5             # achieved figures over time; 0 = result record only
    workers: Workers | None = None
    cpus: Cpus | None = None
    policy: Literal["other", "batch", "idle", "fifo", "rr"] | None = None
    priority: Priority | None = None
    nice: Nice | None = None

    #: campaign key -> probe option, in the order they are passed (after the common ones)
    OPTIONS: ClassVar[dict[str, str]] = {}

    @model_validator(mode="after")
    def _scheduling(self):
        rt = self.policy in ("fifo", "rr")
        if rt and self.priority is None:
            raise ValueError(f'policy "{self.policy}" needs priority from 1 to 99')
        if not rt and self.priority is not None:
            raise ValueError(f'priority applies to policy "fifo" or "rr" (this load\'s policy is '
                             f'"{self.policy or "other"}"); use nice for "other" and "batch"')
        if self.nice and self.policy in ("fifo", "rr", "idle"):
            raise ValueError(f'nice applies to policy "other" or "batch", not "{self.policy}"')
        return self

    def probe_args(self, kind: str) -> list[str]:
        args = ["load", "--kind", kind]
        for key, option in (("workers", "--workers"), ("cpus", "--cpus"), ("policy", "--policy"),
                            ("priority", "--priority"), ("nice", "--nice")):
            value = getattr(self, key)
            if value is not None:
                args += [option, str(value)]
        args += ["--window-s", number_arg(self.window_s)]
        for key, option in self.OPTIONS.items():
            value = getattr(self, key)
            if value is None:
                continue
            if isinstance(value, bool):
                # Both states of a flag with a negation are passed, so the command says which.
                if option == "--fsync":
                    args.append("--fsync" if value else "--no-fsync")
                elif value:
                    args.append(option)
            elif isinstance(value, float):
                args += [option, number_arg(value)]
            else:
                args += [option, str(value)]
        return args


class _ProbeLoadBackground(Background):
    """A running `rtvb-probe load`: its supervised process and the stream of its records."""

    def __init__(self, bg: Background, stream: ProbeStream, site: LoadSite,
                 after_kill: Callable[[dict[str, Any], LoadSite], None] | None = None) -> None:
        self.bg, self.stream, self.site, self.after_kill = bg, stream, site, after_kill
        self.argv = bg.argv

    def poll(self) -> int | None:
        return self.bg.poll()

    def stop(self) -> None:
        self.bg.stop()
        # A load SIGKILLed after the stop grace period, recognisable by its missing `end` record,
        # cleaned nothing up: what it leaves behind is the host's to remove.
        if self.stream.end is None and self.after_kill is not None:
            self.after_kill(self.stream.meta or {}, self.site)

    def output_tail(self) -> str:
        end = self.stream.end or {}
        return end.get("error") or self.bg.output_tail()

    def failure(self) -> str | None:
        return self.bg.failure()


class ProbeLoad(Load):
    """One `rtvb-probe load --kind KIND` per measurement; the subclasses name the kind."""

    Params: ClassVar[type[ProbeLoadParams]]

    def probe_args(self) -> list[str]:
        return self.params.probe_args(self.kind)

    def after_kill(self, meta: dict[str, Any], site: LoadSite) -> None:
        """Remove what the load leaves behind when it was killed before it could (its `meta` record)."""

    def commands(self) -> list[str]:
        return ["rtvb-probe " + shlex.join(self.probe_args())]

    def launch(self, ctx: LoadContext) -> Background | None:
        site = ctx.site(self.where)
        stream = ProbeStream(f'output of load "{self.name}" in environment {site.environment}')
        changed = threading.Event()
        running = []                            # the `started` record, once it came

        def on_line(line: str) -> None:
            record = stream.feed(line)          # a malformed line becomes the load's failure()
            if ctx.on_record is not None:
                ctx.on_record(self.name, stream.count, record)
            if record["type"] == "started":
                running.append(record)
            if record["type"] in ("meta", "started", "end"):
                changed.set()

        bg = site.target.start_background([site.probe, *self.probe_args()], on_line)
        loaded = _ProbeLoadBackground(bg, stream, site, self.after_kill)
        late = ""
        try:
            t0 = time.monotonic()
            while not (running or stream.end is not None):
                changed.wait(0.02)
                changed.clear()
                waited = time.monotonic() - t0
                if bg.poll() is not None or bg.failure():
                    break
                if stream.meta is None and waited > START_TIMEOUT_S:
                    late = f"no output within {START_TIMEOUT_S:g} s"
                    break
                if waited > START_TIMEOUT_S + PREPARE_TIMEOUT_S:
                    late = f"its workers were not ready within {START_TIMEOUT_S + PREPARE_TIMEOUT_S:g} s"
                    break
        except BaseException:
            loaded.stop()
            raise
        if not running or stream.end is not None or bg.failure():
            loaded.stop()                       # also delivers its last records
            why = (bg.failure() or (stream.end or {}).get("error") or late or bg.output_tail()
                   or "no output")
            raise LoadError(f'load "{self.name}" ({self.commands()[0]}) did not start in environment '
                            f"{site.environment}: {why}")
        return loaded


def register(kind: str, params: type[ProbeLoadParams], base: type[ProbeLoad] | None = None) -> type[ProbeLoad]:
    """A probe generator as load kind `kind` (a load folder's params.py calls it with its keys, and
    its own ProbeLoad subclass when it has more to do)."""
    cls = type(f"{kind.capitalize()}Load", (base or ProbeLoad,), {"kind": kind, "Params": params,
                                                           "__doc__": f"`rtvb-probe load --kind {kind}`."})
    return LOADS.register(kind)(cls)


def kinds() -> dict[str, type[ProbeLoadParams]]:
    """Every probe generator's load kind and its keys (once the load folders are loaded)."""
    return {name: cls.Params for name in LOADS.names()
            if isinstance(cls := LOADS.get(name), type) and issubclass(cls, ProbeLoad)}
