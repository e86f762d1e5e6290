"""The `mem-alloc` benchmark: allocate/touch/free cost and page-walk cost (`rtvb-probe mem-alloc`)."""

from __future__ import annotations

from typing import Optional

from pydantic import model_validator

from rtvbench.benchmarks.base import BENCHMARKS, Benchmark
from rtvbench.catalog import MEM_ALLOC_METHODS, MEM_ALLOC_TESTS, MEM_ALLOC_TOUCH
from rtvbench.params import (NonNegativeInt, PositiveInt, Sizes, StrictModel, names_or_all, size_points,
                             sizes_arg)

DEFAULT_SIZES = tuple(m << 20 for m in (2, 4, 8, 16, 32, 48, 64))
QUICK_SIZES = (2 << 20, 16 << 20)
# For the progress bar: a first touch costs ~2 us per 4 KiB page in a VM, and every cycle
# touches the whole block; the TLB chases take about a second with the defaults.
_S_PER_BYTE, _TLB_S = 2e-6 / 4096, 1.0


# Validated name lists (module level: pydantic reads annotations by name).
Tests = names_or_all(MEM_ALLOC_TESTS, "test")
Methods = names_or_all(MEM_ALLOC_METHODS, "method")
TouchKinds = names_or_all(MEM_ALLOC_TOUCH, "touch kind")


class MemAllocParams(StrictModel):
    tests: Tests = MEM_ALLOC_TESTS
    sizes: Optional[Sizes] = None
    methods: Methods = MEM_ALLOC_METHODS
    touch: TouchKinds = MEM_ALLOC_TOUCH
    # None: the probe's default, which --quick lowers (an explicit value wins over --quick)
    iterations: Optional[PositiveInt] = None    # allocate/touch/free cycles per size (10; quick 5)
    tlb_lines: Optional[PositiveInt] = None     # lines of the TLB chases (8192 with 4 KiB pages; quick 4096)
    repetitions: Optional[PositiveInt] = None   # TLB chases per layout (3)
    seed: NonNegativeInt = 1
    cpu: Optional[NonNegativeInt] = None
    quick: bool = False

    @model_validator(mode="after")
    def _whole_pages(self):
        if self.sizes is not None:
            bad = [s for s in size_points(self.sizes) if s < 4096]
            if bad:
                raise ValueError(f"sizes must be at least one page (size {bad[0]} is not)")
        return self


@BENCHMARKS.register("mem-alloc")
class MemAllocBenchmark(Benchmark):
    kind = "mem-alloc"
    Params = MemAllocParams

    def probe_args(self) -> list[str]:
        p: MemAllocParams = self.params
        args = ["mem-alloc", "--tests", ",".join(p.tests)]
        if p.sizes is not None:
            args += ["--sizes", sizes_arg(p.sizes)]
        args += ["--methods", ",".join(p.methods), "--touch", ",".join(p.touch)]
        for option, value in (("--iterations", p.iterations), ("--tlb-lines", p.tlb_lines),
                              ("--repetitions", p.repetitions)):
            if value is not None:
                args += [option, str(value)]
        args += ["--seed", str(p.seed)]
        if p.cpu is not None:
            args += ["--cpu", str(p.cpu)]
        if p.quick:
            args.append("--quick")
        return args

    def expected_seconds(self) -> float:
        p: MemAllocParams = self.params
        seconds = 0.0
        if "alloc" in p.tests:
            sizes = p.sizes if p.sizes is not None else (QUICK_SIZES if p.quick else DEFAULT_SIZES)
            iterations = p.iterations or (5 if p.quick else 10)
            seconds += sum(size_points(sizes)) * _S_PER_BYTE * iterations * len(p.methods) * len(p.touch)
        if "tlb" in p.tests:
            seconds += _TLB_S * (p.repetitions or 3) / 3
        return seconds
