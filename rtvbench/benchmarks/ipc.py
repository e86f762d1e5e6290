"""The `ipc` benchmark: ping-pong round trips by message size (`rtvb-probe ipc`, local mode).

Both ends run in the environment being measured. Measuring between two environments
(`--serve` / `--connect`) needs targets that can start the far end (ssh, qemu); until they
exist the keys that would ask for it are rejected as not supported yet, not as unknown.
"""

from __future__ import annotations

from typing import Any, Optional

from pydantic import field_validator, model_validator

from rtvbench.benchmarks.base import BENCHMARKS, Benchmark
from rtvbench.benchmarks.options import SizeList, names_or_all
from rtvbench.benchmarks.os_primitives import CpuPair
from rtvbench.catalog import IPC_TRANSPORTS
from rtvbench.params import NonNegativeInt, PositiveInt, PositiveNumber, StrictModel, number_arg

DEFAULT_SIZES = (16, 64, 256, 1024, 1280, 4096, 65536)
DEFAULT_COUNT, DEFAULT_WARMUP = 10_000, 100
# A local round trip costs ~10-50 us (more with large messages), for the progress bar only.
_ROUND_TRIP_S = 30e-6


# Validated name lists (module level: pydantic reads annotations by name).
Transports = names_or_all(IPC_TRANSPORTS, "transport")


class IpcParams(StrictModel):
    transports: Transports = IPC_TRANSPORTS
    sizes: Optional[SizeList] = None
    count: Optional[PositiveInt] = None
    duration_s: Optional[PositiveNumber] = None
    warmup: Optional[NonNegativeInt] = None
    timeout_s: Optional[PositiveNumber] = None
    cpus: Optional[CpuPair] = None
    # Between environments: a later issue's targets.
    peer: Optional[Any] = None
    serve: Optional[Any] = None
    connect: Optional[Any] = None
    port: Optional[Any] = None
    bind: Optional[Any] = None

    @field_validator("peer", "serve", "connect", "port", "bind")
    @classmethod
    def _not_yet(cls, v):
        raise ValueError("round trips between two environments are not supported yet (they need the ssh "
                         "and qemu targets); remove this key to measure both ends in this environment")

    @field_validator("sizes")
    @classmethod
    def _range(cls, v):
        if v is not None:
            bad = [s for s in v if not 16 <= s <= 16 << 20]
            if bad:
                raise ValueError(f"message sizes must be from 16 B to 16 MiB ({bad[0]} B is not)")
        return v

    @model_validator(mode="after")
    def _one_limit(self):
        if self.count is not None and self.duration_s is not None:
            raise ValueError("set count or duration_s, not both")
        return self


@BENCHMARKS.register("ipc")
class IpcBenchmark(Benchmark):
    kind = "ipc"
    Params = IpcParams

    def probe_args(self) -> list[str]:
        p: IpcParams = self.params
        args = ["ipc", "--transport", ",".join(p.transports)]
        if p.sizes is not None:
            args += ["--sizes", ",".join(str(s) for s in p.sizes)]
        if p.count is not None:
            args += ["--count", str(p.count)]
        if p.duration_s is not None:
            args += ["--duration-s", number_arg(p.duration_s)]
        if p.warmup is not None:
            args += ["--warmup", str(p.warmup)]
        if p.timeout_s is not None:
            args += ["--timeout-s", number_arg(p.timeout_s)]
        if p.cpus is not None:
            args += ["--cpus", ",".join(str(c) for c in p.cpus)]
        return args

    def expected_seconds(self) -> float:
        p: IpcParams = self.params
        points = len(p.transports) * len(p.sizes or DEFAULT_SIZES)
        warmup = (p.warmup if p.warmup is not None else DEFAULT_WARMUP) * _ROUND_TRIP_S
        if p.duration_s is not None:
            return points * (p.duration_s + warmup)
        return points * ((p.count or DEFAULT_COUNT) * _ROUND_TRIP_S + warmup)
