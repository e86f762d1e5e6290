"""rtvbench: real-time and virtualization benchmarking for embedded platforms."""

__version__ = "0.1.0"
