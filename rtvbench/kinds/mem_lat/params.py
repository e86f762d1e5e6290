"""The `mem-lat` benchmark: dependent-load latency over working-set sizes (`rtvb-probe mem-lat`)."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import field_validator, model_validator

from rtvbench.benchmarks.base import BENCHMARKS, Benchmark
from rtvbench.params import (SizeRange, StrictModel, freestanding_sizes_problem, probe_int, probe_size, probe_sizes,
                             size_points, size_text, sizes_arg)

DEFAULT_SIZES = (SizeRange(512, 256 << 20),)
QUICK_SIZES = tuple(1024 << (2 * i) for i in range(9))        # 1K, 4K, ... 64M
# Seconds per (mode, size) point and repetition, for the progress bar: the default run measured
# 39 sizes x 2 modes in ~27 s on a 2-vCPU VM; --quick samples for 2 ms instead of 10.
_POINT_S, _QUICK_POINT_S = 0.35, 0.1
#: the largest stride the bare-metal image's chase takes
FREESTANDING_MAX_STRIDE = 1 << 20


# The probe's ranges (module level: pydantic reads annotations by name).
Sizes = probe_sizes("sizes", 1, 16 << 30, 128)
Stride = probe_size("stride", 8, 1 << 30)
Repetitions = probe_int("repetitions", 1, 1000)
Seed = probe_int("seed", 0, 2**64 - 1)
Cpu = probe_int("cpu", 0, 1023)


class MemLatParams(StrictModel):
    sizes: Optional[Sizes] = None           # None: the probe's default sweep (or --quick's)
    stride: Stride = 64
    mode: Literal["seq", "random", "both"] = "both"
    repetitions: Repetitions = 1
    hugepages: Literal["off", "thp", "hugetlb"] = "off"
    seed: Seed = 1
    cpu: Optional[Cpu] = None
    quick: bool = False

    @field_validator("stride")
    @classmethod
    def _pointer_multiple(cls, v):
        if v % 8:
            raise ValueError("must be a multiple of 8 bytes (the pointer size)")
        return v

    @model_validator(mode="after")
    def _two_slots(self):
        if self.sizes is not None:
            small = [s for s in size_points(self.sizes) if s < 2 * self.stride]
            if small:
                raise ValueError(f"every size must hold at least two slots of stride {self.stride} B "
                                 f"(size {small[0]} is too small)")
        return self


@BENCHMARKS.register("mem-lat")
class MemLatBenchmark(Benchmark):
    kind = "mem-lat"
    Params = MemLatParams
    key_options = {"sizes": "--sizes", "stride": "--stride", "mode": "--mode", "repetitions": "--repetitions",
                   "hugepages": "--hugepages", "seed": "--seed", "cpu": "--cpu", "quick": "--quick"}
    # The bare-metal image's pointer chase (probe/baremetal/memlat.c), in its static memory area.
    freestanding_options = ("--sizes", "--stride", "--mode", "--seed")

    def freestanding_problems(self, area_bytes: int) -> list[tuple[str, str]]:
        p: MemLatParams = self.params
        out = []
        if p.stride > FREESTANDING_MAX_STRIDE:
            out.append(("stride", f"its stride is at most {size_text(FREESTANDING_MAX_STRIDE)}, not "
                                  f"{size_text(p.stride)}; use a smaller stride"))
        if p.sizes is not None:         # without sizes the image takes its own list, which fits its area
            why = freestanding_sizes_problem(p.sizes, lambda size: size + size // p.stride * 4, area_bytes,
                                             "the chain and 4 bytes a slot")
            if why:
                out.append(("sizes", why))
        return out

    def probe_args(self) -> list[str]:
        p: MemLatParams = self.params
        args = ["mem-lat"]
        if p.sizes is not None:
            args += ["--sizes", sizes_arg(p.sizes)]
        args += ["--stride", str(p.stride), "--mode", p.mode, "--repetitions", str(p.repetitions),
                 "--hugepages", p.hugepages, "--seed", str(p.seed)]
        if p.cpu is not None:
            args += ["--cpu", str(p.cpu)]
        if p.quick:
            args.append("--quick")
        return args

    def expected_seconds(self) -> float:
        p: MemLatParams = self.params
        sizes = p.sizes if p.sizes is not None else (QUICK_SIZES if p.quick else DEFAULT_SIZES)
        modes = 2 if p.mode == "both" else 1
        return len(size_points(sizes)) * modes * p.repetitions * (_QUICK_POINT_S if p.quick else _POINT_S)
