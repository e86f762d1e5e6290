"""The `ipc` kind: ping-pong round trips by transport and message size (docs/probe/os-ipc.md).

Figures `<transport>.<size>B.<stat>`, round-trip time in ns (`_us`, `_ms` too), with stat one of
min, avg, max, stddev, p50, p90, p99, p999, p9999 (e.g. `unix.1024B.p99`), and
`<transport>.<size>B.count`, the round trips measured. Message sizes are always in bytes, as
IPC benchmarks usually quote them. A size whose data arrived corrupted (`verified: false`)
yields no figure.
"""

from __future__ import annotations

import re
from typing import Any

from rtvbench.analysis.histogram import result_histogram
from rtvbench.analysis.kind import Result, register
from rtvbench.analysis.quantities import COUNT, TIME, QuantityKind, number
from rtvbench.catalog import IPC_STATS, IPC_TRANSPORTS
from rtvbench.results import Measurement
from rtvbench.units import counted

_STEM = re.compile(r"^([a-z]+)\.([1-9][0-9]*)B\.([a-z0-9]+)$")
_HEADLINE = ("avg", "p99", "max")
#: the body of the distribution first, then its tail
_TABLE_ORDER = ("min", "avg", "p50", "p90", "p99", "p999", "p9999", "max", "stddev", "count")
_PERCENT = {"p50": 50.0, "p90": 90.0, "p99": 99.0, "p999": 99.9, "p9999": 99.99}


def parse_stem(name: str) -> tuple[str, int, str] | None:
    m = _STEM.match(name)
    if not m or m.group(1) not in IPC_TRANSPORTS or m.group(3) not in IPC_STATS + ("count",):
        return None
    return m.group(1), int(m.group(2)), m.group(3)


class IpcKind(QuantityKind):
    name = "ipc"

    def _client_results(self, m: Measurement) -> list[dict[str, Any]]:
        return [r for r in m.results if r.get("role") == "client" and r.get("transport") in IPC_TRANSPORTS
                and isinstance(r.get("size_bytes"), int) and r.get("verified") is not False]

    def decode(self, m: Measurement) -> Result:
        """Figures as every measurement-suite kind has them, and each (transport, size)'s round trips as
        a distribution of its own, from the histogram the probe keeps of them."""
        out = super().decode(m)
        for r in self._client_results(m):
            hist = result_histogram(r)
            if hist is not None and hist.total:
                out.distributions[f"{r['transport']} {r['size_bytes']} B"] = hist
        return out

    def quantities(self, m: Measurement) -> dict[str, tuple[str, float]]:
        out = {}
        for r in self._client_results(m):
            prefix = f"{r['transport']}.{r['size_bytes']}B"
            count = number(r.get("count"))
            if count is not None:
                out[f"{prefix}.count"] = (COUNT, count)
            if not count:
                continue            # no round trip: every time figure is null
            for stat in IPC_STATS:
                v = number(r.get(f"{stat}_ns"))
                if v is not None:
                    out[f"{prefix}.{stat}"] = (TIME, v)
        return out

    def family(self, name: str) -> str | None:
        p = parse_stem(name)
        if p is None:
            return None
        return COUNT if p[2] == "count" else TIME

    def headline(self, name: str) -> bool:
        p = parse_stem(name)
        return p is not None and p[2] in _HEADLINE

    def table_stems(self, present: list[str]) -> list[str]:
        # The fastest round trip beside the mean and the tail, so that min / avg / max by message
        # size can be read off the tables as evaluations quote them; compared it is not (one round
        # trip in thousands, as the max, but the max is the tail a comparison is about).
        shown = set(self.compared_figures(present))
        shown |= {f for f in present if (p := parse_stem(f)) is not None and p[2] == "min"}
        return sorted(shown, key=self.order)

    def stable(self, name: str) -> bool:
        # The maximum is one round trip in thousands: one preemption moves it, by design.
        p = parse_stem(name)
        return p is not None and p[2] != "max"

    def order(self, name: str) -> tuple:
        p = parse_stem(name)
        return (IPC_TRANSPORTS.index(p[0]), p[1], _TABLE_ORDER.index(p[2])) if p else (99, 0, 0)

    def label(self, figure: str) -> str:
        parts = self.split(figure)
        p = parse_stem(parts[0]) if parts else None
        return f"{p[0]} {p[1]} B {p[2]}" if p else figure

    def samples_needed(self, figure: str) -> int:
        parts = self.split(figure)
        p = parse_stem(parts[0]) if parts else None
        if p and p[2] in _PERCENT:
            return round(1 / (1 - _PERCENT[p[2]] / 100))
        return 1

    def sample_count(self, m: Measurement) -> int | None:
        counts = [r.get("count") for r in self._client_results(m) if isinstance(r.get("count"), int)]
        return min(counts) if counts else None

    def describe(self, benchmark: dict[str, Any], params: dict[str, Any] | None) -> str:
        p = params or {}
        transports = p.get("transports") or benchmark.get("transports") or list(IPC_TRANSPORTS)
        sizes = p.get("sizes_bytes") or []
        count = p.get("count")
        amount = (counted(count, "round trip") if count else
                  f"{p['duration_ns'] / 1e9:g} s of round trips" if p.get("duration_ns") else "round trips")
        peer = benchmark.get("peer")
        where = (f"between two processes of this environment over {', '.join(transports)}" if not peer else
                 f"between a client in the measured environment and a server rtvbench starts in `{peer}`, over "
                 f"{', '.join(transports)}" + (" through a memory region the two share" if transports == ["shm"]
                                                else "")
                 + f" (in `{peer}`'s own cells both ends run there)")
        return (f"Ping-pong round trips {where}"
                + (f", message sizes {', '.join(f'{s} B' for s in sizes)}" if sizes else "")
                + f": per transport and size, {amount} after a warm-up, each message the same size both ways and "
                "checked byte for byte. The figures are the round-trip time from before the send to after the "
                "whole answer arrived: exact min, max and mean, percentiles from the probe's histogram (within 1 %).")


register(IpcKind())
