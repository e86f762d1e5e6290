"""The `mem-lat` kind: dependent-load latency over working-set sizes (docs/probe/memory.md).

Figures: `lat.<size>_<mode>`, ns per access (`_us` too), e.g. `lat.64MiB_random`, `lat.512B_seq`;
sizes are named by size_token (the largest binary unit that divides them: `1536KiB`, not 1.5 MiB).
The consideration names the cache levels read off each environment's curve (cache_levels.py).
"""

from __future__ import annotations

import re
from typing import Any

from rtvbench.analysis.cache_levels import Level, detect_levels, levels_sentence, reported_caches
from rtvbench.analysis.kind import register
from rtvbench.analysis.quantities import TIME, QuantityKind, number
from rtvbench.analysis.stats import summarize
from rtvbench.catalog import MEM_LAT_MODES
from rtvbench.results import Measurement
from rtvbench.units import human_duration, human_size, parse_size_token, size_token

_STEM = re.compile(r"^lat\.([0-9]+(?:B|KiB|MiB|GiB))_(seq|random)$")
_MODE_WORDS = {"random": "random-access curve", "seq": "sequential curve (prefetchers follow it)"}


def stem(size: int, mode: str) -> str:
    return f"lat.{size_token(size)}_{mode}"


def parse_stem(name: str) -> tuple[int, str] | None:
    """(size in bytes, mode) of a latency stem, or None."""
    m = _STEM.match(name)
    if not m:
        return None
    size = parse_size_token(m.group(1))
    return (size, m.group(2)) if size is not None else None


Curve = list[tuple[int, float, float, float]]     # (size, median, min, max) over repetitions, ns


def curves(data, bench: str) -> dict[tuple[str, str, str], Curve]:
    """(environment, load, mode) -> the latency curve over the completed repetitions."""
    points = sorted((p, f) for f in data.figure_names(bench) if (p := parse_stem(f)) is not None)
    out: dict[tuple[str, str, str], Curve] = {}
    for env, load in data.cells(bench):
        for (size, mode), figure in points:
            s = summarize(data.values(env, load, bench, figure))
            if s.n:
                out.setdefault((env, load, mode), []).append((size, s.median, s.min, s.max))
    return out


def reported(data, env: str) -> dict[int, int]:
    """The caches the environment's sysinfo reported (level -> bytes), {} when none."""
    return reported_caches((data.run.fingerprints.get(env) or {}).get("caches"))


def levels(data, bench: str) -> dict[tuple[str, str, str], list[Level]]:
    """The cache levels of every random-chain curve, from its per-size medians, named against the
    environment's reported caches. Sequential curves have none: prefetchers follow a sequential chain,
    so its steps are theirs ("L1 up to 192 KiB" on a 32 KiB L1d), not the caches'."""
    return {key: detect_levels(((size, med) for size, med, _, _ in curve), reported(data, key[0]))
            for key, curve in curves(data, bench).items() if key[2] == "random"}


def levels_text(data, key: tuple[str, str, str], found: list[Level]) -> str:
    return levels_sentence(found, reported(data, key[0]))


class MemLatKind(QuantityKind):
    name = "mem-lat"

    def quantities(self, m: Measurement) -> dict[str, tuple[str, float]]:
        out = {}
        for r in m.results:
            size, mode, ns = r.get("size_bytes"), r.get("mode"), number(r.get("ns_per_access"))
            if isinstance(size, int) and size > 0 and mode in MEM_LAT_MODES and ns is not None:
                out[stem(size, mode)] = (TIME, ns)
        return out

    def family(self, name: str) -> str | None:
        return TIME if parse_stem(name) is not None else None

    def order(self, name: str) -> tuple:
        p = parse_stem(name)
        return (MEM_LAT_MODES.index(p[1]), p[0]) if p else (9, 0)

    def label(self, figure: str) -> str:
        parts = self.split(figure)
        p = parse_stem(parts[0]) if parts else None
        return f"{human_size(p[0])} {p[1]}" if p else figure

    def describe(self, benchmark: dict[str, Any], params: dict[str, Any] | None) -> str:
        p = params or {}
        stride = p.get("stride_bytes") or 64
        mode = p.get("mode") or benchmark.get("mode") or "both"
        sizes = p.get("sizes_bytes") or []
        sweep = (f" over {len(sizes)} working-set sizes from {human_size(min(sizes))} to {human_size(max(sizes))}"
                 if sizes else " over a sweep of working-set sizes")
        chains = {"seq": f"a sequential chain (one slot every {stride} B, which stride prefetchers follow)",
                  "random": f"a random cyclic chain of {stride}-byte slots (which no prefetcher can follow, "
                            "so beyond the caches it shows the full load-to-use latency including TLB misses)",
                  "both": f"both a sequential chain ({stride} B stride, prefetched) and a random chain "
                          "(prefetch-proof, includes TLB misses)"}
        pages = p.get("hugepages") or benchmark.get("hugepages") or "off"
        return (f"Memory read latency by pointer chasing (lat_mem_rd's method, own implementation){sweep}: each "
                f"load's address is the value the previous load returned, so the time per load is the latency of "
                f"the level of the hierarchy the working set fits in. The probe walks {chains.get(mode, chains['both'])}. "
                f"Huge pages: {pages}. Each size's figure is the probe's median sample, and the curves below show "
                "the median over repetitions; plateaus of the curve are the cache levels.")

    def results(self, data, bench: str) -> list[tuple[str, str, str]]:
        return []           # the cache levels below say it better, per curve

    def key_result(self, data, bench: str, env: str, load: str) -> str:
        key = (env, load, "random")
        found = levels(data, bench)
        if key in found:
            return levels_text(data, key, found[key])
        return "no random chain measured (a sequential chain shows the prefetchers, not the caches)"

    def extra_considerations(self, data, bench: str, comps: list) -> list[tuple[str, str, str]]:
        out = []
        found = levels(data, bench)
        all_curves = curves(data, bench)
        for env, load in data.cells(bench):
            key = (env, load, "random")
            if key in found:
                out.append(("info", "levels", f"In `{env}` under `{load}`, the {_MODE_WORDS['random']} shows "
                                              f"{levels_text(data, key, found[key])}."))
            seq, rnd = all_curves.get((env, load, "seq")), all_curves.get((env, load, "random"))
            if seq and rnd:
                out.append(("info", "result",
                            f"In `{env}` under `{load}`, a cached read (smallest sequential size, "
                            f"{human_size(seq[0][0])}) takes {human_duration(seq[0][1])} and an uncached one "
                            f"(largest random size, {human_size(rnd[-1][0])}) {human_duration(rnd[-1][1])}."))
        return out


register(MemLatKind())
