"""Benchmark kinds. Each kind is one module that registers itself in BENCHMARKS."""

from rtvbench.benchmarks.base import BENCHMARKS, Benchmark
from rtvbench.benchmarks import latency  # noqa: F401  (registers "latency")

__all__ = ["BENCHMARKS", "Benchmark"]
