"""The tail of each cell: how far its samples reach and an extreme-value estimate beyond them.

Per (environment, load) cell of a latency benchmark, the histograms of its completed repetitions
merged (the pooled wake-up latencies, or the response times with a work budget): the sample count,
the observed maximum, what that count cannot cover, and the generalized-Pareto estimate of the
value exceeded once per 10^6 activations (rtvbench.analysis.tail), or why there is none.
"""

from __future__ import annotations

from dataclasses import dataclass

from rtvbench.analysis.dataset import COMPLETE, RunData
from rtvbench.analysis.histogram import merge_all
from rtvbench.analysis.tail import TailEstimate, covered, estimate_tail
from rtvbench.units import format_time

#: the probability per activation the estimate is for
EXCEEDANCE = 1e-6


@dataclass
class CellTail:
    environment: str
    load: str
    distribution: str               # "wake-up" or "response"
    samples: int
    max_us: float | None
    estimate: TailEstimate

    @property
    def coverage(self) -> str:
        return covered(self.samples)

    def to_dict(self) -> dict:
        e = self.estimate
        return {"environment": self.environment, "load": self.load, "distribution": self.distribution,
                "samples": self.samples, "max_us": self.max_us, "not_covered": self.coverage,
                "estimate": {"exceedance_per_activation": e.exceedance, "value_us": e.value,
                             "ci95_us": [e.ci_low, e.ci_high] if e.value is not None else None,
                             "shape": e.shape, "scale_us": e.scale, "threshold_us": e.threshold,
                             "excesses": e.n_excesses, "fit_p": e.fit_p, "refused": e.refused}}


def cell_tails(data: RunData, bench: str) -> list[CellTail]:
    """One entry per cell with samples: the response times when the benchmark has a work budget,
    else the wake-up latencies."""
    out = []
    for env, load in data.cells(bench):
        results = [data.result(m) for m in data.measurements(env, load, bench, COMPLETE)]
        name = "response" if any("response" in r.distributions for r in results) else "wake-up"
        hists = [r.distributions[name] for r in results if name in r.distributions]
        if not hists:
            continue
        merged = merge_all(hists)
        # Bucket midpoints in microseconds, the top one at the exact maximum the probe reported.
        values = (merged.lo + merged.hi) / 2 / 1000
        if merged.max_ns is not None and len(values):
            values[-1] = min(values[-1], merged.max_ns / 1000)
        counts = merged.count
        try:
            estimate = estimate_tail(values, counts, EXCEEDANCE)
        except (ValueError, ArithmeticError) as e:     # a numerical corner the fit did not foresee
            estimate = TailEstimate(EXCEEDANCE, None, None, None, None, None, None, merged.total, 0, None,
                                    f"the fit failed ({e})")
        out.append(CellTail(env, load, name, merged.total,
                            merged.max_ns / 1000 if merged.max_ns is not None else None, estimate))
    return out


def time_text(v: float | None) -> str:
    """A time in microseconds as the tail table and sentences write it ("–" for none)."""
    return "–" if v is None else format_time(v, "us")


def tail_sentences(cells: list[CellTail], bench: str) -> list[str]:
    """The consideration's words on the tail: what the largest count covers, and the estimate of the
    cell with the largest one (or why there is none)."""
    if not cells:
        return []
    fewest = min(cells, key=lambda c: c.samples)
    worst = max(cells, key=lambda c: c.max_us or 0)
    what = "response time" if worst.distribution == "response" else "wake-up latency"
    text = (f"Tail coverage of `{bench}`: the maxima are over {fewest.samples:,} to "
            f"{max(c.samples for c in cells):,} samples per cell; with {fewest.samples:,}, "
            f"{fewest.coverage}. The largest {what}, {time_text(worst.max_us)} in `{worst.environment}` under "
            f"`{worst.load}`, was observed over {worst.samples:,} samples")
    e = worst.estimate
    if e.ok:
        ci = f" (95 % CI {time_text(e.ci_low)} .. {time_text(e.ci_high)})"
        text += (f"; an extreme-value estimate (generalized Pareto fit over the largest {e.n_excesses:,} "
                 f"samples, shape {e.shape:.2f}) puts the value exceeded once in 10^6 activations at "
                 f"{time_text(e.value)}{ci}. It is a model's extrapolation, not a measurement.")
    else:
        text += f"; no extreme-value estimate: {e.refused}."
    return [text]
