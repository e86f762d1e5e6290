"""The `mem-bw` kind: memory bandwidth per operation and buffer size (docs/probe/memory.md).

Figures: `bw.<op>.<size>`, bytes per second summed over the threads (`_MBps`, `_GBps`: 10^6 and
10^9 bytes per second), e.g. `bw.memcpy.16MiB`, `bw.rand_wr.64MiB` (`rand_rd`, `rand_wr`: the buffer's
64-byte lines in a random order fixed per size). A byte is the buffer size once per pass for every
operation, a copy included (the counting of bw_mem and sysbench; STREAM counts a copy twice).
"""

from __future__ import annotations

import re
from typing import Any

from rtvbench.analysis.kind import register
from rtvbench.analysis.quantities import BANDWIDTH, QuantityKind, number
from rtvbench.units import human_size, parse_size_token, size_token
from rtvbench.catalog import MEM_BW_OPS
from rtvbench.results import Measurement

_STEM = re.compile(r"^bw\.([a-z_]+)\.([0-9]+(?:B|KiB|MiB|GiB))$")
# How the random-order operations read in a table.
_OP_LABELS = {"rand_rd": "random-order read", "rand_wr": "random-order write"}


def parse_stem(name: str) -> tuple[str, int] | None:
    """(operation, size in bytes) of a bandwidth stem, or None."""
    m = _STEM.match(name)
    if not m or m.group(1) not in MEM_BW_OPS:
        return None
    size = parse_size_token(m.group(2))
    return (m.group(1), size) if size is not None else None


class MemBwKind(QuantityKind):
    name = "mem-bw"

    def quantities(self, m: Measurement) -> dict[str, tuple[str, float]]:
        out = {}
        for r in m.results:
            op, size, bps = r.get("op"), r.get("size_bytes"), number(r.get("bps"))
            # The aggregate record; with one thread it equals the thread's own figure.
            if r.get("thread") == "all" and op in MEM_BW_OPS and isinstance(size, int) and bps is not None:
                out[f"bw.{op}.{size_token(size)}"] = (BANDWIDTH, bps)
        return out

    def family(self, name: str) -> str | None:
        return BANDWIDTH if parse_stem(name) is not None else None

    def order(self, name: str) -> tuple:
        p = parse_stem(name)
        return (MEM_BW_OPS.index(p[0]), p[1]) if p else (99, 0)

    def label(self, figure: str) -> str:
        parts = self.split(figure)
        p = parse_stem(parts[0]) if parts else None
        return f"{_OP_LABELS.get(p[0], p[0])} {human_size(p[1])}" if p else figure

    def describe(self, benchmark: dict[str, Any], params: dict[str, Any] | None) -> str:
        p = params or {}
        ops = p.get("ops") or benchmark.get("operations") or list(MEM_BW_OPS)
        threads = p.get("threads") or benchmark.get("threads") or 1
        return (f"Memory bandwidth (bw_mem's quantities, own implementation) of {', '.join(ops)} over buffers of "
                f"each size, {threads} thread{'s' if threads != 1 else ''} each with its own buffers, all running at "
                "once. A byte is counted once per pass for every operation, a copy included (as bw_mem and "
                "sysbench count; STREAM counts a copy as read plus write, twice this figure). `rand_rd` and "
                "`rand_wr` read or write the buffer's 64-byte lines in a random order, fixed per size, that no "
                "prefetcher can follow. Rates are the probe's median pass; MB/s and GB/s are 10^6 and 10^9 bytes "
                "per second.")


register(MemBwKind())
