"""The `mem-alloc` kind: cost of getting memory and of translating addresses (docs/probe/memory.md).

Figures (ns, `_us` and `_ms` too):
  `alloc.<method>.<touch>.<size>.first`          the first allocate/touch/free cycle
  `alloc.<method>.<touch>.<size>.cold`           median of the cycles that took page faults
  `alloc.<method>.<touch>.<size>.warm`           median of the cycles without faults
  `alloc.<method>.<touch>.<size>.cold_per_page`  the cold median per base page
  `alloc.<method>.<touch>.<size>.avg`, `.min`, `.max`  over every cycle, cold and warm (the report's
                                                 Ave / Min / Max table pools them over repetitions)
  `tlb.spread`, `tlb.packed`, `tlb.miss`         ns per access of the two chases, and their difference
e.g. `alloc.mmap.page.16MiB.cold`, `tlb.miss`.
"""

from __future__ import annotations

import re
from typing import Any

from rtvbench.analysis.kind import register
from rtvbench.analysis.quantities import TIME, QuantityKind, number
from rtvbench.units import human_size, parse_size_token, size_token
from rtvbench.catalog import MEM_ALLOC_METHODS, MEM_ALLOC_TOUCH
from rtvbench.results import Measurement

_ALLOC = re.compile(r"^alloc\.([a-z]+)\.([a-z]+)\.([0-9]+(?:B|KiB|MiB|GiB))\."
                    r"(first|cold|warm|cold_per_page|avg|min|max)$")
_ALLOC_FIELDS = {"first": "first_ns", "cold": "cold_median_ns", "warm": "warm_median_ns",
                 "cold_per_page": "cold_ns_per_page", "avg": "avg_ns", "min": "min_ns", "max": "max_ns"}
#: statistics over every cycle, shown in the section's own table rather than the generic ones
CYCLE_STATS = ("avg", "min", "max")
_TLB_FIELDS = {"spread": "spread_ns_per_access", "packed": "packed_ns_per_access", "miss": "tlb_miss_ns"}
_STATS = tuple(_ALLOC_FIELDS)


def _alloc(name: str):
    m = _ALLOC.match(name)
    if not m or m.group(1) not in MEM_ALLOC_METHODS or m.group(2) not in MEM_ALLOC_TOUCH:
        return None
    size = parse_size_token(m.group(3))
    return (m.group(1), m.group(2), size, m.group(4)) if size is not None else None


class MemAllocKind(QuantityKind):
    name = "mem-alloc"

    def quantities(self, m: Measurement) -> dict[str, tuple[str, float]]:
        out = {}
        for r in m.results:
            if r.get("test") == "alloc":
                method, touch, size = r.get("method"), r.get("touch"), r.get("size_bytes")
                if method not in MEM_ALLOC_METHODS or touch not in MEM_ALLOC_TOUCH or not isinstance(size, int):
                    continue
                for stat, field in _ALLOC_FIELDS.items():
                    v = number(r.get(field))
                    if v is not None:
                        out[f"alloc.{method}.{touch}.{size_token(size)}.{stat}"] = (TIME, v)
            elif r.get("test") == "tlb":
                for stat, field in _TLB_FIELDS.items():
                    v = number(r.get(field))
                    if v is not None:
                        out[f"tlb.{stat}"] = (TIME, v)
        return out

    def family(self, name: str) -> str | None:
        if _alloc(name) is not None or name in (f"tlb.{s}" for s in _TLB_FIELDS):
            return TIME
        return None

    def headline(self, name: str) -> bool:
        # first/cold/warm are the classic alloc_dealloc table; per page is cold / pages; the statistics over
        # every cycle have a table of their own (section.py)
        return not name.endswith((".cold_per_page", *(f".{s}" for s in CYCLE_STATS)))

    def order(self, name: str) -> tuple:
        a = _alloc(name)
        if a:
            return (0, MEM_ALLOC_METHODS.index(a[0]), MEM_ALLOC_TOUCH.index(a[1]), a[2], _STATS.index(a[3]))
        return (1, list(_TLB_FIELDS).index(name[4:]) if name[4:] in _TLB_FIELDS else 9, 0, 0, 0)

    def label(self, figure: str) -> str:
        parts = self.split(figure)
        a = _alloc(parts[0]) if parts else None
        if a:
            return f"{a[0]} + {a[1]} touch, {human_size(a[2])}: {a[3].replace('_', ' ')}"
        if parts and parts[0].startswith("tlb."):
            return {"tlb.spread": "TLB chase, one line per page", "tlb.packed": "TLB chase, lines packed",
                    "tlb.miss": "page walk (spread - packed)"}[parts[0]]
        return figure

    def describe(self, benchmark: dict[str, Any], params: dict[str, Any] | None) -> str:
        p = params or {}
        tests = p.get("tests") or ["alloc", "tlb"]
        text = []
        if "alloc" in tests:
            text.append("Allocate, touch and free blocks (an alloc_dealloc-style test): each cycle is timed on "
                        "its own and counted cold when it took page faults, warm otherwise; `malloc` leaves the "
                        "decision to return memory to the allocator, `mmap` faults every time, `reuse` touches one "
                        "mapping again and again.")
        if "tlb" in tests:
            text.append("The page-walk cost is the difference between two random pointer chases over the same "
                        "lines: one line per page (every access needs its own translation) and lines packed into "
                        "few pages (the TLB covers them); in a guest it is the two-stage VA-IPA-PA walk.")
        return " ".join(text)


register(MemAllocKind())
