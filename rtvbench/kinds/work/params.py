"""The `work` benchmark: self-verifying CPU workloads with `rtvb-probe work` (docs/probe/work.md)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import field_validator, model_validator

from rtvbench.benchmarks.base import BENCHMARKS, Benchmark
from rtvbench.catalog import WORK_KERNELS, WORK_SIZES
from rtvbench.cpulist import pinned_cpus, probe_cpus
from rtvbench.params import StrictModel, names_or_all, probe_int
from rtvbench.spec import Placement

_EXPECT_VALUE = re.compile(r"^(0x)?[0-9a-fA-F]{1,16}$")

# Rough seconds of one run of one kernel, for the progress bar only (a 2-core x86_64 VM:
# milliseconds small, 0.05-0.5 s large; slower boards take longer, which the bar shows).
_RUN_S = {"small": 0.002, "large": 0.25}


# Validated name lists (module level: pydantic reads annotations by name).
Kernels = names_or_all(WORK_KERNELS, "kernel")
Repetitions = probe_int("repetitions", 1, 100_000)
Seed = probe_int("seed", 0, 2**64 - 1)
Copies = probe_int("copies", 1, 256)
Rounds = probe_int("rounds", 1, 1000)
Cpus = probe_cpus("cpus", 256)


class WorkParams(StrictModel):
    kernels: Kernels = tuple(WORK_KERNELS)
    size: Literal["small", "large", "both"] = "both"
    repetitions: Repetitions = 3            # timed runs inside one probe run, per kernel and size
    seed: Seed = 1
    expect: dict[str, str] = {}             # "kernel.size" -> expected checksum (hex)
    copies: Copies = 1                      # N >= 2: N copies at once, alternated with 1-copy rounds
    rounds: Rounds = 3                      # with copies: pairs of (1 copy, N copies) rounds
    cpus: Cpus | None = None                # with copies: their CPUs; None: every allowed CPU

    @model_validator(mode="after")
    def _copies_only(self):
        if self.copies < 2 and ("rounds" in self.model_fields_set or self.cpus is not None):
            raise ValueError("`rounds` and `cpus` apply to copies: set `copies` to 2 or more")
        return self

    @field_validator("expect")
    @classmethod
    def _expect(cls, v):
        for key, value in v.items():
            kernel, _, size = key.partition(".")
            if kernel not in WORK_KERNELS or size not in WORK_SIZES:
                raise ValueError(f'key "{key}" must be "<kernel>.<small|large>", e.g. "crc32.small"')
            if not isinstance(value, str) or not _EXPECT_VALUE.match(value):
                raise ValueError(f'"{key}" must be a checksum of 1 to 16 hex digits, e.g. "cbf43926"')
        return v

    @property
    def sizes(self) -> tuple[str, ...]:
        return WORK_SIZES if self.size == "both" else (self.size,)


@BENCHMARKS.register("work")
class WorkBenchmark(Benchmark):
    kind = "work"
    Params = WorkParams

    def probe_args(self) -> list[str]:
        p: WorkParams = self.params
        kernels = "all" if tuple(p.kernels) == tuple(WORK_KERNELS) else ",".join(p.kernels)
        args = ["work", "--kernels", kernels, "--size", p.size, "--repetitions", str(p.repetitions),
                "--seed", str(p.seed)]
        for key, value in sorted(p.expect.items()):
            args += ["--expect", f"{key}={value}"]
        if p.copies > 1:
            args += ["--copies", str(p.copies)]
        # Given without copies they reach the probe too, which refuses them as validate does.
        if p.copies > 1 or "rounds" in p.model_fields_set:
            args += ["--rounds", str(p.rounds)]
        if p.cpus is not None:
            args += ["--cpus", p.cpus]
        return args

    def figure_problem(self, figure: str) -> str | None:
        if (figure.endswith((".single_ips", ".copies_ips", ".speedup", ".scaling_efficiency"))
                or figure.startswith("coremark_style.")) and self.params.copies < 2:
            return "exists only with copies: set copies to 2 or more"
        return None

    def placement(self) -> Placement:
        p: WorkParams = self.params
        return Placement(pinned_cpus(p.cpus), threads=p.copies) if p.copies > 1 else Placement()

    def expected_seconds(self) -> float:
        p: WorkParams = self.params
        one = len(p.kernels) * p.repetitions * sum(_RUN_S[s] for s in p.sizes)
        # Copies: per round one run alone, then N at once (about as long on N free CPUs).
        return one * 2 * p.rounds if p.copies > 1 else one
