"""The `mem-bw` benchmark: memory bandwidth of plain loops and libc (`rtvb-probe mem-bw`)."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import model_validator

from rtvbench.benchmarks.base import BENCHMARKS, Benchmark
from rtvbench.catalog import MEM_BW_OPS
from rtvbench.cpulist import pinned_cpus, probe_cpus
from rtvbench.params import (StrictModel, freestanding_sizes_problem, names_or_all, probe_int, probe_sizes,
                             size_points, sizes_arg)
from rtvbench.spec import Placement

DEFAULT_SIZES = tuple(4096 << (2 * i) for i in range(8))       # 4K, 16K, ... 64M
QUICK_SIZES = (16 << 10, 1 << 20, 64 << 20)
# Seconds per (size, op) point for the progress bar: the harness stops at 1 % error or after its
# time limit (about 1 s by default, 0.2 s with --quick), plus mapping and touching the buffers.
_POINT_S, _QUICK_POINT_S = 0.6, 0.15
#: the operations that time the C library's functions
LIBC_OPS = ("memcpy", "memset")


# Validated name lists (module level: pydantic reads annotations by name).
Operations = names_or_all(MEM_BW_OPS, "operation")
Sizes = probe_sizes("sizes", 1024, 16 << 30, 128)
Threads = probe_int("threads", 1, 256)
Cpus = probe_cpus("cpus", 256)


class MemBwParams(StrictModel):
    operations: Operations = MEM_BW_OPS
    sizes: Optional[Sizes] = None           # per thread; None: the probe's default (or --quick's)
    threads: Threads = 1
    cpus: Optional[Cpus] = None          # the threads are pinned to these in turn
    hugepages: Literal["off", "thp", "hugetlb"] = "off"
    quick: bool = False

    @model_validator(mode="after")
    def _multiples_of_64(self):
        if self.sizes is not None:
            bad = [s for s in size_points(self.sizes) if s % 64]
            if bad:
                raise ValueError(f"sizes must be multiples of 64 bytes (size {bad[0]} is not)")
        return self


@BENCHMARKS.register("mem-bw")
class MemBwBenchmark(Benchmark):
    kind = "mem-bw"
    Params = MemBwParams
    key_options = {"operations": "--ops", "sizes": "--sizes", "threads": "--threads", "cpus": "--cpus",
                   "hugepages": "--hugepages", "quick": "--quick"}
    # The bare-metal image's loops (probe/baremetal/membw.c): one thread, no C library to copy or set with.
    freestanding_options = ("--ops", "--sizes")

    def freestanding_problems(self, area_bytes: int) -> list[tuple[str, str]]:
        p: MemBwParams = self.params
        out = []
        libc = [op for op in p.operations if op in LIBC_OPS]
        if libc:
            offered = ", ".join(f'"{op}"' for op in MEM_BW_OPS if op not in LIBC_OPS)
            out.append(("operations", f"it has no C library, so no {' or '.join(libc)} (the default \"all\" "
                                      f"includes them); list operations out of {offered}"))
        if p.sizes is not None:
            why = freestanding_sizes_problem(p.sizes, lambda size: 2 * size + size // 64 * 4, area_bytes,
                                             "two buffers of a size and 4 bytes a line")
            if why:
                out.append(("sizes", why))
        return out

    def placement(self) -> Placement:
        p: MemBwParams = self.params
        return Placement(pinned_cpus(p.cpus), threads=p.threads,
                         unpinned_when_missing=True)

    def probe_args(self) -> list[str]:
        p: MemBwParams = self.params
        args = ["mem-bw", "--ops", ",".join(p.operations)]
        if p.sizes is not None:
            args += ["--sizes", sizes_arg(p.sizes)]
        args += ["--threads", str(p.threads)]
        if p.cpus is not None:
            args += ["--cpus", p.cpus]
        args += ["--hugepages", p.hugepages]
        if p.quick:
            args.append("--quick")
        return args

    def expected_seconds(self) -> float:
        p: MemBwParams = self.params
        sizes = p.sizes if p.sizes is not None else (QUICK_SIZES if p.quick else DEFAULT_SIZES)
        return len(size_points(sizes)) * len(p.operations) * (_QUICK_POINT_S if p.quick else _POINT_S)
