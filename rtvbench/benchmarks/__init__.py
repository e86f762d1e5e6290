"""The campaign side of benchmark kinds: the registry of their parameter models.

Each kind's rtvbench/kinds/<kind>/params.py registers itself in BENCHMARKS when loaded."""

from rtvbench.benchmarks.base import BENCHMARKS, Benchmark
from rtvbench.kinds import load

load("params")

__all__ = ["BENCHMARKS", "Benchmark"]
