"""The `os` benchmark: per-operation cost of OS primitives (`rtvb-probe os`, docs/probe/os-ipc.md)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Optional

from pydantic import PlainValidator, field_validator
from pydantic_core import PydanticCustomError

from rtvbench.benchmarks.base import BENCHMARKS, Benchmark
from rtvbench.catalog import OS_TESTS
from rtvbench.cpulist import CpuPair
from rtvbench.params import PositiveInt, PositiveNumber, Size, SizeList, StrictModel, names_or_all, number_arg
from rtvbench.spec import Placement

_RING = re.compile(r"^(\d+)p/(\d+)k$")
# For the progress bar: the default run of every test takes ~20 s, --quick ~3 s, and a figure's
# time is bounded by max_time_s (2 s, 0.3 s with --quick) but usually ends at 1 % error sooner.
_FULL_S, _QUICK_S, _FIGURES_IN_FULL = 20.0, 3.0, 40


def _rings(v: Any) -> tuple[str, ...]:
    if not isinstance(v, list) or not v or not all(isinstance(x, str) for x in v):
        raise PydanticCustomError("rings", 'must be a list of rings such as ["2p/0k", "8p/16k"]')
    for ring in v:
        m = _RING.match(ring)
        if not m or not 2 <= int(m.group(1)) <= 64:
            raise PydanticCustomError("rings", '"{ring}" must be <processes>p/<KiB>k with 2 to 64 processes, '
                                               'e.g. "2p/0k"', {"ring": ring})
    return tuple(v)


def _ctx_cpu(v: Any) -> int | str:
    if v == "none" or (isinstance(v, int) and not isinstance(v, bool) and v >= 0):
        return v
    raise PydanticCustomError("ctx_cpu", 'must be a CPU number or "none" (no pinning)')


Rings = Annotated[tuple, PlainValidator(_rings)]
CtxCpu = Annotated[Any, PlainValidator(_ctx_cpu)]


# Validated name lists (module level: pydantic reads annotations by name).
Tests = names_or_all(OS_TESTS, "test")


class OsParams(StrictModel):
    tests: Tests = tuple(OS_TESTS)
    quick: bool = False
    dir: Optional[str] = None                     # where file tests make their scratch directory
    fds: Optional[list[PositiveInt]] = None
    ctx: Optional[Rings] = None
    ctx_cpu: Optional[CtxCpu] = None
    pair_cpus: Optional[CpuPair] = None
    mmap_sizes: Optional[SizeList] = None
    file_sizes: Optional[SizeList] = None
    pagefault_size: Optional[Size] = None
    reread_size: Optional[Size] = None
    bw_chunk: Optional[Size] = None
    min_sample_ms: Optional[PositiveNumber] = None
    max_time_s: Optional[PositiveNumber] = None
    target_error: Optional[PositiveNumber] = None

    @field_validator("fds")
    @classmethod
    def _fd_count(cls, v):
        if v is not None and (not v or max(v) > 1000):
            raise ValueError("must be a non-empty list of descriptor counts from 1 to 1000")
        return v

    @field_validator("target_error")
    @classmethod
    def _fraction(cls, v):
        if v is not None and v >= 1:
            raise ValueError("must be a fraction below 1, e.g. 0.01 for 1 %")
        return v


@BENCHMARKS.register("os")
class OsBenchmark(Benchmark):
    kind = "os"
    Params = OsParams

    def placement(self) -> Placement:
        p: OsParams = self.params
        pins = set(p.pair_cpus or ()) | ({p.ctx_cpu} if isinstance(p.ctx_cpu, int) else set())
        return Placement(tuple(sorted(pins)) or None)

    def probe_args(self) -> list[str]:
        p: OsParams = self.params
        args = ["os", "--tests", "all" if tuple(p.tests) == tuple(OS_TESTS) else ",".join(p.tests)]
        if p.quick:
            args.append("--quick")
        lists = {"--fds": p.fds, "--ctx": p.ctx, "--mmap-sizes": p.mmap_sizes, "--file-sizes": p.file_sizes,
                 "--pair-cpus": p.pair_cpus}
        for option, value in lists.items():
            if value is not None:
                args += [option, ",".join(str(x) for x in value)]
        single = {"--dir": p.dir, "--ctx-cpu": p.ctx_cpu, "--pagefault-size": p.pagefault_size,
                  "--reread-size": p.reread_size, "--bw-chunk": p.bw_chunk}
        for option, value in single.items():
            if value is not None:
                args += [option, str(value)]
        for option, value in (("--min-sample-ms", p.min_sample_ms), ("--max-time-s", p.max_time_s),
                              ("--target-error", p.target_error)):
            if value is not None:
                args += [option, number_arg(value)]
        return args

    def expected_seconds(self) -> float:
        p: OsParams = self.params
        full = _QUICK_S if p.quick else _FULL_S
        seconds = full * len(p.tests) / len(OS_TESTS)
        if p.max_time_s is not None:
            seconds = min(seconds, p.max_time_s * _FIGURES_IN_FULL * len(p.tests) / len(OS_TESTS) + 0.5)
        return seconds
