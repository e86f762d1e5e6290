"""The `mem-alloc` benchmark: allocate/touch/free cost and page-walk cost (`rtvb-probe mem-alloc`)."""

from __future__ import annotations

from typing import Optional

from rtvbench.benchmarks.base import BENCHMARKS, Benchmark
from rtvbench.catalog import MEM_ALLOC_METHODS, MEM_ALLOC_TESTS, MEM_ALLOC_TOUCH
from rtvbench.params import StrictModel, names_or_all, probe_int, probe_sizes, size_points, sizes_arg

DEFAULT_SIZES = tuple(m << 20 for m in (2, 4, 8, 16, 32, 48, 64))
QUICK_SIZES = (2 << 20, 16 << 20)
# For the progress bar: a first touch costs ~2 us per 4 KiB page in a VM, and every cycle
# touches the whole block; the TLB chases take about a second with the defaults.
_S_PER_BYTE, _TLB_S = 2e-6 / 4096, 1.0


# Validated name lists (module level: pydantic reads annotations by name).
Tests = names_or_all(MEM_ALLOC_TESTS, "test")
Methods = names_or_all(MEM_ALLOC_METHODS, "method")
TouchKinds = names_or_all(MEM_ALLOC_TOUCH, "touch kind")
# The probe's ranges. The smallest size is one page, 4 KiB on most targets: a target with
# larger pages refuses smaller sizes itself.
Sizes = probe_sizes("sizes", 4096, 16 << 30, 128)
Iterations = probe_int("iterations", 1, 1000)
TlbLines = probe_int("tlb-lines", 128, 4_194_304)
Repetitions = probe_int("repetitions", 1, 1000)
Seed = probe_int("seed", 0, 2**64 - 1)
Cpu = probe_int("cpu", 0, 1023)


class MemAllocParams(StrictModel):
    tests: Tests = MEM_ALLOC_TESTS
    sizes: Optional[Sizes] = None
    methods: Methods = MEM_ALLOC_METHODS
    touch: TouchKinds = MEM_ALLOC_TOUCH
    # None: the probe's default, which --quick lowers (an explicit value wins over --quick)
    iterations: Optional[Iterations] = None     # allocate/touch/free cycles per size (10; quick 5)
    tlb_lines: Optional[TlbLines] = None        # lines of the TLB chases (8192 with 4 KiB pages; quick 4096)
    repetitions: Optional[Repetitions] = None   # TLB chases per layout (3)
    seed: Seed = 1
    cpu: Optional[Cpu] = None
    quick: bool = False


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
