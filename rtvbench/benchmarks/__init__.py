"""Benchmark kinds. Each kind is one module that registers itself in BENCHMARKS."""

from rtvbench.benchmarks.base import BENCHMARKS, Benchmark
# Each import registers its kind.
from rtvbench.benchmarks import ipc, latency, mem_alloc, mem_bw, mem_lat, os_primitives, work  # noqa: F401

__all__ = ["BENCHMARKS", "Benchmark"]
