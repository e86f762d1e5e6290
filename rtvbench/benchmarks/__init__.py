"""The campaign side of benchmark kinds: the registry of their parameter models.

Each kind's rtvbench/kinds/<kind>/params.py registers itself in BENCHMARKS when loaded, which is
when BENCHMARKS is first asked for that kind (or for every name)."""

from rtvbench.benchmarks.base import BENCHMARKS, Benchmark
from rtvbench.kinds import load


def _find(kind: str | None) -> None:
    load("params", kind)


BENCHMARKS.finder = _find

__all__ = ["BENCHMARKS", "Benchmark"]
