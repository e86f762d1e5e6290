"""Every sample of a cell's completed repetitions taken together: what one long run made of the
repetitions would have shown. The per-environment table (min / average / max latency) and the
response-time matrix (average, maximum, standard deviation, misses) both read this.

Pooled exactly from each repetition's figures: the extremes are the smallest and largest of any
repetition, the mean is each repetition's mean weighted by its sample count, and the standard
deviation combines each repetition's (population) deviation with the spread of their means.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rtvbench.analysis.dataset import COMPLETE, RunData
from rtvbench.kinds.latency.names import RESPONSE


@dataclass
class Pooled:
    environment: str
    load: str
    repetitions: int            # completed repetitions with samples
    samples: int
    min_us: float | None
    avg_us: float | None
    max_us: float | None
    stddev_us: float | None
    misses: int                 # deadline misses with a work budget, else missed periods

    def to_dict(self) -> dict:
        return {"environment": self.environment, "load": self.load, "repetitions": self.repetitions,
                "samples": self.samples, "min_us": self.min_us, "avg_us": self.avg_us, "max_us": self.max_us}


def misses_figure(present: list[str]) -> str:
    """Deadline misses in runs with a work budget, missed periods otherwise."""
    return "deadline_misses" if "deadline_misses" in present else "missed"


def pool(data: RunData, env: str, load: str, bench: str, response: bool = False) -> Pooled:
    """The cell's wake-up latencies pooled, or with `response` its response times (work budget)."""
    prefix = RESPONSE if response else ""
    misses_name = misses_figure(data.figure_names(bench))
    parts = []
    lo = hi = None
    misses = 0
    for m in data.measurements(env, load, bench, COMPLETE):
        f = data.figures(m)
        misses += int(f.get(misses_name, 0))
        n, mn, avg, mx = (f.get(prefix + k) for k in ("count", "min_us", "avg_us", "max_us"))
        if not n or mn is None or avg is None or mx is None:
            continue
        parts.append((n, avg, f.get(prefix + "stddev_us") or 0.0))
        lo = mn if lo is None else min(lo, mn)
        hi = mx if hi is None else max(hi, mx)
    total = sum(n for n, _, _ in parts)
    mean = sum(n * a for n, a, _ in parts) / total if total else None
    sd = (math.sqrt(max(0.0, sum(n * (s * s + (a - mean) ** 2) for n, a, s in parts) / total))
          if total else None)
    return Pooled(env, load, len(parts), int(total), lo, mean, hi, sd, misses)


def latency_by_environment(data: RunData, bench: str, response: bool = False) -> list[Pooled]:
    """One pooled row per (environment, load) cell of the benchmark."""
    return [pool(data, env, load, bench, response) for env, load in data.cells(bench)]
