"""The traced spikes of each cell, counted by cause, and what a comparison did to each cause.

Per (environment, load) cell of a latency benchmark run with a trace threshold: every `trace`
record of its completed repetitions explained (attribution), how many breaches went untraced (the
probe saves at most `trace_breaches` per measurement, and none while it saves one), and the
counts by cause, so that two cells can be compared cause by cause: "`guest_rt` removed the softirq
(NET_RX) spikes; the hypervisor gaps remain".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rtvbench.analysis.dataset import COMPLETE, RunData
from rtvbench.kinds.latency.attribution import CAUSE_WORDS, CAUSES, Spike, attribute


@dataclass
class CellSpikes:
    environment: str
    load: str
    spikes: list[Spike]
    untraced: int                   # breaches over the threshold that were not saved
    repetitions: int

    @property
    def counts(self) -> dict[str, int]:
        out = {c: 0 for c in CAUSES}
        for s in self.spikes:
            out[s.cause] = out.get(s.cause, 0) + 1
        return {c: n for c, n in out.items() if n}

    def culprits(self, cause: str) -> list[str]:
        """The culprits of a cause as counted across repetitions (no pids), most frequent first."""
        seen: dict[str, int] = {}
        for s in self.spikes:
            if s.cause == cause and s.group:
                seen[s.group] = seen.get(s.group, 0) + 1
        return sorted(seen, key=lambda k: -seen[k])

    def to_dict(self) -> dict[str, Any]:
        return {"environment": self.environment, "load": self.load, "repetitions": self.repetitions,
                "traced": len(self.spikes), "untraced": self.untraced, "counts": self.counts,
                "spikes": [s.to_dict() for s in self.spikes]}


def traced(data: RunData, bench: str) -> bool:
    """Whether the benchmark asked for trace capture."""
    from rtvbench.kinds.latency import keys     # here: `show` decodes without the parameter models (pydantic)

    params = keys.of(data.benchmark_params(bench))
    return bool(params and params.trace_threshold_us)


def cell_spikes(data: RunData, bench: str) -> list[CellSpikes]:
    if not traced(data, bench):
        return []
    out = []
    for env, load in data.cells(bench):
        ms = data.measurements(env, load, bench, statuses=COMPLETE)
        spikes: list[Spike] = []
        untraced = 0
        for m in ms:
            for record in m.traces:
                s = attribute(record)
                if s is not None:
                    s.repetition = m.repetition + 1
                    spikes.append(s)
            merged = m.result("all") or {}
            n = merged.get("breaches_untraced")
            if isinstance(n, int) and not isinstance(n, bool):
                untraced += n
        out.append(CellSpikes(env, load, spikes, untraced, len(ms)))
    return out


def _label(cell: CellSpikes, cause: str) -> str:
    """The cause in words with its two most frequent culprits: "other tasks (rtvb-hog, SCHED_FIFO 90)",
    "softirq processing (NET_RX)"."""
    names = cell.culprits(cause)
    words = CAUSE_WORDS[cause]
    if cause in ("irq", "softirq", "task", "preempt-off", "irq-off") and names:
        return f"{words} ({'; '.join(names[:2])})"
    return words


def comparison_sentences(cells: list[CellSpikes], pairs: list[tuple[str, str, str, str, str]]) -> list[str]:
    """For each compared pair (words, baseline environment, baseline load, candidate environment, candidate
    load): which causes of spikes the candidate removed, which remain and which are new."""
    by_cell = {(c.environment, c.load): c for c in cells}
    out = []
    for words, be, bl, ce, cl in pairs:
        base, cand = by_cell.get((be, bl)), by_cell.get((ce, cl))
        if base is None or cand is None or not (base.spikes or cand.spikes):
            continue
        bc, cc = base.counts, cand.counts
        gone = [c for c in bc if c not in cc]
        kept = [c for c in bc if c in cc]
        new = [c for c in cc if c not in bc]
        parts = []
        if gone:
            parts.append(" and ".join(f"the {_label(base, c)} spikes are gone ({bc[c]} traced before, none now)"
                                      for c in gone))
        if kept:
            parts.append(" and ".join(f"the {_label(cand, c)} remain ({bc[c]} traced before, {cc[c]} now)"
                                      for c in kept))
        if new:
            parts.append(" and ".join(f"{_label(cand, c)} appear (none traced before, {cc[c]} now)" for c in new))
        if parts:
            out.append(f"Traced spikes by cause, {words}: " + "; ".join(parts) + ".")
    return out
