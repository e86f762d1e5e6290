"""The probe's load generators as campaign loads: `kind = "cpu"`, `"mem"`, `"cache"`, `"io"`,
`"fork"`, `"leak"`, `"timer"`, `"net"` (docs/probe/load.md).

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

import os
import shlex
import threading
import time
from typing import Annotated, Any, ClassVar, Literal

from pydantic import PlainValidator, field_validator, model_validator
from pydantic_core import PydanticCustomError

from rtvbench.cpulist import probe_cpus
from rtvbench.loads.base import LOADS, Load, LoadContext, LoadError, LoadSite
from rtvbench.params import (Name, Number, ProbeRange, StrictModel, number_arg, parse_size, probe_int, probe_number,
                             probe_size, size_text)
from rtvbench.probe import ProbeStream
from rtvbench.targets.base import Background

#: how long a load may take to print its `meta` record (a static binary starts in milliseconds;
#: a slow target link is the only reason to wait longer)
START_TIMEOUT_S = 10.0
#: how long its workers may then take to prepare (prefaulting the largest buffer, 16 GiB, at a slow
#: board's 1 GB/s)
PREPARE_TIMEOUT_S = 30.0
#: the directory an `io` load makes for itself (docs/probe/load.md, "Stopping")
IO_DIR_PREFIX = "rtvb-load-"

K, M, G = 1 << 10, 1 << 20, 1 << 30
MAX_BUFFER = 16 * G          # the probe's MEM_MAX_BYTES on 64-bit targets


def _auto_or_size(v: Any) -> int | str:
    if v == "auto":
        return v
    try:
        n = parse_size(v)
    except ValueError:
        n = -1
    if not 8 * K <= n <= MAX_BUFFER:
        raise PydanticCustomError("size", 'must be a size from 8K to {hi}, such as "32M", or "auto"',
                                  {"hi": size_text(MAX_BUFFER)})
    return n


# The probe's ranges (docs/probe/load.md); module level: pydantic reads annotations by name.
Workers = probe_int("workers", 1, 256)
Cpus = probe_cpus("cpus", 1024)
Priority = probe_int("priority", 1, 99)
Nice = probe_int("nice", -20, 19)
WindowS = probe_number("window-s", 0.01, 1e6, "a number of seconds", zero_ok=True)
Percent = probe_number("percent", 0, 100, "a duty cycle in percent")
PeriodMs = probe_number("period-ms", 0.1, 60000, "a number of milliseconds")
ForkRate = probe_number("rate", 0, 1e6, "forks per second (0 = as fast as possible)")
LeakRate = probe_number("rate-mbps", 0, 1e6, "MiB per second (0 = all at once)")
TimerRate = probe_number("rate-hz", 1, 1e6, "wake-ups per second")
BufferSize = probe_size("buffer-size", 8 * K, MAX_BUFFER)
AutoOrBufferSize = Annotated[Any, PlainValidator(_auto_or_size), ProbeRange("buffer-size", 8 * K, MAX_BUFFER)]
BpsLimit = probe_size("bps-limit", 0, 1 << 40)
BlockSize = probe_size("block-size", 512, 64 * M)
FileSize = probe_size("file-size", 4 * K, G)
LeakLimit = probe_size("limit", M, MAX_BUFFER)


class ProbeLoadParams(StrictModel):
    """Keys every probe load kind takes (docs/probe/load.md, "Common options")."""

    where: Name = "same"
    # Counted from the probe's `started` record, printed once every worker has prepared (buffers
    # prefaulted, work calibrated): a probe load is at full strength from there.
    settle_s: Number = 0.0
    window_s: WindowS = 0.5             # achieved figures over time; 0 = result record only
    workers: Workers | None = None
    cpus: Cpus | None = None
    policy: Literal["other", "batch", "idle", "fifo", "rr"] | None = None
    priority: Priority | None = None
    nice: Nice | None = None

    #: campaign key -> probe option, in the order they are passed (after the common ones)
    OPTIONS: ClassVar[dict[str, str]] = {}

    @field_validator("settle_s")
    @classmethod
    def _settle(cls, v: float) -> float:
        if not 0 <= v <= 60:
            raise ValueError("must be from 0 to 60 seconds")
        return v

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


class CpuLoadParams(ProbeLoadParams):
    percent: Percent | None = None
    period_ms: PeriodMs | None = None
    method: Literal["integer", "float", "matrix", "mixed"] | None = None
    busy_clock: Literal["thread", "wall"] | None = None
    OPTIONS: ClassVar[dict[str, str]] = {"percent": "--percent", "period_ms": "--period-ms",
                                         "method": "--method", "busy_clock": "--busy-clock"}


class MemLoadParams(ProbeLoadParams):
    buffer_size: BufferSize | None = None
    op: Literal["read", "write", "copy"] | None = None
    bps_limit: BpsLimit | None = None
    OPTIONS: ClassVar[dict[str, str]] = {"buffer_size": "--buffer-size", "op": "--op",
                                         "bps_limit": "--bps-limit"}

    @model_validator(mode="after")
    def _copy_halves(self):
        if (self.op or "copy") == "copy" and self.buffer_size is not None and self.buffer_size < 16 * K:
            raise ValueError('op "copy" needs buffer_size of at least 16K (it copies one half onto the other)')
        return self


class CacheLoadParams(ProbeLoadParams):
    buffer_size: AutoOrBufferSize | None = None
    bps_limit: BpsLimit | None = None
    OPTIONS: ClassVar[dict[str, str]] = {"buffer_size": "--buffer-size", "bps_limit": "--bps-limit"}


class IoLoadParams(ProbeLoadParams):
    dir: str | None = None
    file_size: FileSize | None = None
    block_size: BlockSize | None = None
    fsync: bool | None = None
    drop_cache: bool | None = None
    bps_limit: BpsLimit | None = None
    OPTIONS: ClassVar[dict[str, str]] = {"dir": "--dir", "file_size": "--file-size",
                                         "block_size": "--block-size", "fsync": "--fsync",
                                         "drop_cache": "--drop-cache", "bps_limit": "--bps-limit"}

    @field_validator("dir")
    @classmethod
    def _dir(cls, v: str) -> str:
        if not v:
            raise ValueError("must name a directory")
        return v

    @model_validator(mode="after")
    def _block_in_file(self):
        file_size = self.file_size if self.file_size is not None else 4 * M
        if self.block_size is not None and self.block_size > file_size:
            raise ValueError(f"block_size ({size_text(self.block_size)}) must not exceed file_size "
                             f"({size_text(file_size)})")
        return self


class ForkLoadParams(ProbeLoadParams):
    rate: ForkRate | None = None
    OPTIONS: ClassVar[dict[str, str]] = {"rate": "--rate"}


class LeakLoadParams(ProbeLoadParams):
    rate_mbps: LeakRate | None = None
    limit: LeakLimit | None = None
    OPTIONS: ClassVar[dict[str, str]] = {"rate_mbps": "--rate-mbps", "limit": "--limit"}

    @model_validator(mode="after")
    def _one_worker(self):
        if self.workers not in (None, 1):
            raise ValueError("a leak load runs one worker; drop workers or use 1")
        return self


class TimerLoadParams(ProbeLoadParams):
    rate_hz: TimerRate | None = None
    OPTIONS: ClassVar[dict[str, str]] = {"rate_hz": "--rate-hz"}


class NetLoadParams(ProbeLoadParams):
    bps_limit: BpsLimit | None = None
    block_size: BlockSize | None = None
    OPTIONS: ClassVar[dict[str, str]] = {"bps_limit": "--bps-limit", "block_size": "--block-size"}


class _ProbeLoadBackground(Background):
    """A running `rtvb-probe load`: its supervised process and the stream of its records."""

    def __init__(self, bg: Background, stream: ProbeStream, site: LoadSite) -> None:
        self.bg, self.stream, self.site = bg, stream, site
        self.argv = bg.argv

    def poll(self) -> int | None:
        return self.bg.poll()

    def stop(self) -> None:
        self.bg.stop()
        # The probe removes the io load's directory on every path but SIGKILL (after the stop
        # grace period); only then, recognisable by the missing `end` record, is it ours to do.
        meta = self.stream.meta or {}
        d = (meta.get("params") or {}).get("dir")
        if self.stream.end is None and isinstance(d, str) and os.path.basename(d).startswith(IO_DIR_PREFIX):
            self.site.target.remove_dir(d)

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
        loaded = _ProbeLoadBackground(bg, stream, site)
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


def _register(kind: str, params: type[ProbeLoadParams]) -> type[ProbeLoad]:
    cls = type(f"{kind.capitalize()}Load", (ProbeLoad,), {"kind": kind, "Params": params,
                                                           "__doc__": f"`rtvb-probe load --kind {kind}`."})
    return LOADS.register(kind)(cls)


KINDS: dict[str, type[ProbeLoadParams]] = {
    "cpu": CpuLoadParams, "mem": MemLoadParams, "cache": CacheLoadParams, "io": IoLoadParams,
    "fork": ForkLoadParams, "leak": LeakLoadParams, "timer": TimerLoadParams, "net": NetLoadParams,
}
for _kind, _params in KINDS.items():
    _register(_kind, _params)

__all__ = ["KINDS", "ProbeLoad"]
