"""Wake-up latency per environment over every sample of a cell: minimum, average, maximum (reference 002,
Table 5.2: one row per environment, the figures of the whole measurement rather than a median of
repetitions).

The minimum and maximum are the extremes of all completed repetitions; the average is the mean of all their
samples (each repetition's mean weighted by its sample count), so the row is what one long run made of
the repetitions would have shown.
"""

from __future__ import annotations

from dataclasses import dataclass

from rtvbench.analysis.dataset import COMPLETE, RunData


@dataclass
class LatencyRow:
    environment: str
    load: str
    repetitions: int        # completed repetitions with samples
    samples: int
    min_us: float | None
    avg_us: float | None
    max_us: float | None

    def to_dict(self) -> dict:
        return {"environment": self.environment, "load": self.load, "repetitions": self.repetitions,
                "samples": self.samples, "min_us": self.min_us, "avg_us": self.avg_us, "max_us": self.max_us}


def latency_by_environment(data: RunData, bench: str, prefix: str = "") -> list[LatencyRow]:
    """One row per (environment, load) cell of a latency benchmark. `prefix` = "response_" gives the
    response times of a run with a work budget instead of the wake-up latencies."""
    rows = []
    for env, load in data.cells(bench):
        lo = hi = None
        total = weighted = 0.0
        reps = 0
        for m in data.measurements(env, load, bench, COMPLETE):
            f = data.figures(m)
            n = f.get("count") if not prefix else None
            if prefix:
                r = (m.result("all") or {}).get("response")
                n = r.get("count") if isinstance(r, dict) else None
            mn, avg, mx = (f.get(f"{prefix}{s}_us") for s in ("min", "avg", "max"))
            if not n or mn is None or avg is None or mx is None:
                continue
            reps += 1
            lo = mn if lo is None else min(lo, mn)
            hi = mx if hi is None else max(hi, mx)
            total += n
            weighted += avg * n
        rows.append(LatencyRow(env, load, reps, int(total), lo, weighted / total if total else None, hi))
    return rows
