"""The `os` benchmark: per-operation cost of OS primitives (`rtvb-probe os`, docs/probe/os-ipc.md)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Optional

from pydantic import PlainValidator, field_validator
from pydantic_core import PydanticCustomError

from rtvbench.benchmarks.base import BENCHMARKS, Benchmark
from rtvbench.catalog import OS_TESTS
from rtvbench.cpulist import MAX_CPUS, probe_cpu_pair
from rtvbench.params import (ProbeRange, StrictModel, names_or_all, number_arg, probe_int, probe_list, probe_number,
                             probe_size, probe_sizes, TargetDir)
from rtvbench.spec import Placement

_RING = re.compile(r"^(\d{1,6})p/(\d{1,9})k$")
#: the probe's rings: 2 to 64 processes with up to 64 MiB each, at most 16 rings
RING_PROCESSES, RING_MAX_KIB, MAX_RINGS = (2, 64), 64 << 10, 16
# For the progress bar: the default run of every test takes ~32 s, --quick ~6 s, and a figure's
# time is bounded by max_time_s (2 s, 0.3 s with --quick) but usually ends at 1 % error sooner.
_FULL_S, _QUICK_S, _FIGURES_IN_FULL = 32.0, 6.0, 76


def _rings(v: Any) -> tuple[str, ...]:
    if not isinstance(v, list) or not v or len(v) > MAX_RINGS or not all(isinstance(x, str) for x in v):
        raise PydanticCustomError("rings", 'must be a list of at most {n} rings such as ["2p/0k", "8p/16k"]',
                                  {"n": MAX_RINGS})
    lo, hi = RING_PROCESSES
    for ring in v:
        m = _RING.match(ring)
        if not m or not lo <= int(m.group(1)) <= hi or int(m.group(2)) > RING_MAX_KIB:
            raise PydanticCustomError("rings", '"{ring}" must be <processes>p/<KiB>k with {lo} to {hi} processes '
                                               'of at most {kib}k, e.g. "2p/0k"',
                                      {"ring": ring, "lo": lo, "hi": hi, "kib": RING_MAX_KIB})
    return tuple(v)


def _ctx_cpu(v: Any) -> int | str:
    if v == "none" or (isinstance(v, int) and not isinstance(v, bool) and 0 <= v < MAX_CPUS):
        return v
    raise PydanticCustomError("ctx_cpu", 'must be a CPU number below {n} or "none" (no pinning)', {"n": MAX_CPUS})


Rings = Annotated[tuple, PlainValidator(_rings), ProbeRange("ctx", *RING_PROCESSES, cap=MAX_RINGS)]
CtxCpu = Annotated[Any, PlainValidator(_ctx_cpu), ProbeRange("ctx-cpu", 0, MAX_CPUS - 1)]
PairCpus = probe_cpu_pair("pair-cpus")
Fds = probe_list(probe_int("fds", 1, 1000), "fds", 16)
MmapSizes = probe_sizes("mmap-sizes", 1, 1 << 30, 16, sweeps=False)
FileSizes = probe_sizes("file-sizes", 0, 1 << 30, 16, sweeps=False)
PagefaultSize = probe_size("pagefault-size", 64 << 10, 1 << 30)
RereadSize = probe_size("reread-size", 4096, 1 << 30)
BwChunk = probe_size("bw-chunk", 1, 64 << 20)
MinSampleMs = probe_number("min-sample-ms", 0.01, 10000, "a number of milliseconds")
MaxTimeS = probe_number("max-time-s", 0.001, 3600, "a number of seconds")
TargetError = probe_number("target-error", 1e-6, 1, "a relative standard error")


#: the shell fork_sh starts (`sh -c`, as system() and popen() do)
SHELL = "/bin/sh"

# Validated name lists (module level: pydantic reads annotations by name).
Tests = names_or_all(OS_TESTS, "test")


class OsParams(StrictModel):
    tests: Tests = tuple(OS_TESTS)
    quick: bool = False
    dir: Optional[TargetDir] = None               # where file tests make their scratch directory
    fds: Optional[Fds] = None
    ctx: Optional[Rings] = None
    ctx_cpu: Optional[CtxCpu] = None
    pair_cpus: Optional[PairCpus] = None
    mmap_sizes: Optional[MmapSizes] = None
    file_sizes: Optional[FileSizes] = None
    pagefault_size: Optional[PagefaultSize] = None
    reread_size: Optional[RereadSize] = None
    bw_chunk: Optional[BwChunk] = None
    min_sample_ms: Optional[MinSampleMs] = None
    max_time_s: Optional[MaxTimeS] = None
    target_error: Optional[TargetError] = None

    @field_validator("fds")
    @classmethod
    def _some_fds(cls, v):
        if v is not None and not v:
            raise ValueError("must be a non-empty list of descriptor counts from 1 to 1000")
        return v


@BENCHMARKS.register("os")
class OsBenchmark(Benchmark):
    kind = "os"
    Params = OsParams

    def campaign_problems(self, environments: dict, loads: dict) -> list[tuple[tuple, str]]:
        """fork_sh named in `tests` needs /bin/sh in every environment measured (a qemu guest's
        initramfs has none). With every test (the default) the probe skips it where there is no
        shell and says so, as it does anything the environment lacks."""
        p: OsParams = self.params
        if "fork_sh" not in p.tests or tuple(p.tests) == tuple(OS_TESTS):
            return []
        for env, target in environments.items():
            problem = target is not None and target.check_program(SHELL)
            if problem:
                return [(("benchmarks", self.name, "tests"),
                         f'test "fork_sh" of benchmark "{self.name}" times {SHELL} -c, which environment '
                         f'"{env}" cannot run ({problem}); drop fork_sh from tests or measure it where '
                         f"{SHELL} exists")]
        return []

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
