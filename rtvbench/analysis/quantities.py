"""The common shape of the measurement-suite kinds (work, mem-lat, mem-bw, mem-alloc, os, ipc).

A measurement of these kinds yields many named quantities, which ones depending on the
campaign (the sizes swept, the tests run). Each quantity has a *stem* name in its base unit
and derived unit variants:

  time       `null` (ns), `null_us`, `null_ms`
  bandwidth  `bw.read.16MiB` (bytes/s), `bw.read.16MiB_MBps`, `bw.read.16MiB_GBps` (10^6, 10^9)
  rate       `sha256.large.ops_per_s` (per second; no variants)
  count      `unix.16B.count` (no variants)

A kind module says which stems a measurement has (`quantities`) and which names are stems of
the kind at all (`family`); the figure names, units, formatting, the choice of compared
figures and the generic considerations follow here, once for all of them.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from typing import Any

from rtvbench.analysis.kind import Kind
from rtvbench.results import Measurement
from rtvbench.units import format_percent, human_duration, human_rate, significant

TIME, BANDWIDTH, RATE, COUNT = "time", "bandwidth", "rate", "count"

#: family -> name suffix -> (unit, size of the unit in the base unit)
VARIANTS: dict[str, dict[str, tuple[str, float]]] = {
    TIME: {"": ("ns", 1.0), "_us": ("us", 1e3), "_ms": ("ms", 1e6)},
    BANDWIDTH: {"": ("B/s", 1.0), "_MBps": ("MB/s", 1e6), "_GBps": ("GB/s", 1e9)},
    RATE: {"": ("/s", 1.0)},
    COUNT: {"": ("count", 1.0)},
}
_SUFFIXES = sorted({s for v in VARIANTS.values() for s in v if s}, key=len, reverse=True)



class QuantityKind(Kind):
    """A kind whose figures are stems in a base unit plus their unit variants."""

    @abstractmethod
    def quantities(self, m: Measurement) -> dict[str, tuple[str, float]]:
        """stem -> (family, value in the family's base unit), for one measurement."""

    @abstractmethod
    def family(self, stem: str) -> str | None:
        """The family of a stem name of this kind, or None when it is not one."""

    def headline(self, stem: str) -> bool:
        """Whether a stem is compared and shown in the tables (the others are derived or secondary)."""
        return True

    def stable(self, stem: str) -> bool:
        """Whether repetitions should agree on this stem (a maximum is one sample and may jump)."""
        return True

    def order(self, stem: str) -> tuple:
        """Sort key of stems for tables: the probe's order, not the alphabet's."""
        return (stem,)

    def rate_unit(self, stem: str) -> str:
        return "/s"

    # -- figure names -------------------------------------------------------

    def split(self, figure: str) -> tuple[str, str, str] | None:
        """(stem, family, suffix) of a figure name, or None when it is not a figure of this kind."""
        for suffix in _SUFFIXES:
            if figure.endswith(suffix):
                stem = figure[:-len(suffix)]
                fam = self.family(stem)
                if fam is not None and suffix in VARIANTS[fam]:
                    return stem, fam, suffix
        fam = self.family(figure)
        return (figure, fam, "") if fam is not None else None

    def is_figure(self, figure: str) -> bool:
        return self.split(figure) is not None

    def figures(self, m: Measurement) -> dict[str, float]:
        out: dict[str, float] = {}
        for stem, (fam, value) in self.quantities(m).items():
            if value is None or not math.isfinite(float(value)):
                continue
            for suffix, (_, scale) in VARIANTS[fam].items():
                out[stem + suffix] = value / scale
        return out

    def unit(self, figure: str) -> str:
        parts = self.split(figure)
        if parts is None:
            return "count"
        stem, fam, suffix = parts
        return self.rate_unit(stem) if fam == RATE else VARIANTS[fam][suffix][0]

    def format(self, value: float | None, figure: str) -> str:
        """Human units whatever the variant: "1.23 ns", "45.2 us", "12.3 GB/s", "1.20 Mops/s"."""
        parts = self.split(figure)
        if value is None or parts is None or (isinstance(value, float) and math.isnan(value)):
            return "n/a"
        stem, fam, suffix = parts
        base = value * VARIANTS[fam][suffix][1]
        if fam == TIME:
            return human_duration(base)
        if fam == BANDWIDTH:
            return human_rate(base, "B/s")
        if fam == RATE:
            return human_rate(base, self.rate_unit(stem))
        return f"{value:,.0f}" if float(value).is_integer() else significant(value)

    def stable_figures(self, present: list[str]) -> list[str]:
        return [s for s in self.compared_figures(present) if self.stable(s)]

    def lower_is_better(self, figure: str) -> bool:
        parts = self.split(figure)
        return parts is None or parts[1] in (TIME, COUNT)

    def compared_figures(self, present: list[str]) -> list[str]:
        stems = []
        for f in present:
            parts = self.split(f)
            if parts and parts[2] == "" and parts[1] != COUNT and self.headline(parts[0]):
                stems.append(parts[0])
        return sorted(stems, key=self.order)

    def table_stems(self, present: list[str]) -> list[str]:
        """The stems the report's result tables show, in table order: the compared ones, and those a
        kind shows beside them without comparing them."""
        return self.compared_figures(present)

    def key_result(self, data, bench: str, env: str, load: str) -> str:
        """One line for the report's summary: the first headline figures' medians in a cell."""
        # The statistics (numpy) are the report's, not the decoder's: `show` decodes without them.
        from rtvbench.analysis.stats import summarize

        parts = []
        for stem in self.compared_figures(data.figure_names(bench))[:3]:
            s = summarize(data.values(env, load, bench, stem))
            if s.n:
                parts.append(f"{self.label(stem)} {self.format(s.median, stem)}")
        return "; ".join(parts)

    # -- considerations ------------------------------------------------------

    def considerations(self, data, bench: str, comps: list,
                       analysed: Any = None) -> list[tuple[str, str, str]]:
        from rtvbench.analysis.findings import noise

        return (self.extra_considerations(data, bench, comps) + self.results(data, bench)
                + differences(self, comps)
                + [(f.severity, f.topic, f.text) for f in noise(data, bench, self)])

    def results(self, data, bench: str) -> list[tuple[str, str, str]]:
        """What each environment and load measured, in one sentence each (the key results' line)."""
        out = []
        for env, load in data.cells(bench):
            line = self.key_result(data, bench, env, load)
            if line:
                out.append(("info", "result", f"In `{env}` under `{load}` (medians over the repetitions): {line}."))
        return out

    def extra_considerations(self, data, bench: str, comps: list) -> list[tuple[str, str, str]]:
        """What a kind says beyond the generic sentences (cache levels, failed verifications ...)."""
        return []


def cell_medians(kind, data, bench: str, figures: tuple[str, ...]) -> list[tuple[str, str, str]]:
    """One sentence per cell: the medians over its repetitions of the given figures (those it has)."""
    from rtvbench.analysis.stats import summarize

    out = []
    for env, load in data.cells(bench):
        parts = []
        for figure in figures:
            s = summarize(data.values(env, load, bench, figure))
            if s.n:
                parts.append(f"{kind.label(figure)} {kind.format(s.median, figure)}")
        if parts:
            out.append(("info", "result", f"In `{env}` under `{load}` (medians over the repetitions): "
                                          + "; ".join(parts) + "."))
    return out


def differences(kind: QuantityKind, comps: list) -> list[tuple[str, str, str]]:
    """One sentence per compared pair of cells: how many figures differ significantly, the largest."""
    # The comparison and findings modules are imported here and in considerations(), where they are
    # used: `show` imports the decoders built on this module to decode measurements only.
    from rtvbench.analysis.compare import EQUIVALENT, LOG_T, SIGNIFICANT
    from rtvbench.analysis.findings import NEGLIGIBLE_PERCENT

    groups: dict[tuple, list] = {}
    for c in comps:
        groups.setdefault((c.axis, c.context, c.baseline, c.candidate), []).append(c)
    out = []
    for (axis, context, baseline, candidate), cs in groups.items():
        tested = [c for c in cs if c.test.overhead_percent is not None]
        sig = [c for c in tested if c.test.verdict == SIGNIFICANT
               and abs(c.test.overhead_percent) >= NEGLIGIBLE_PERCENT]
        if axis == "load":
            head = f"Under load `{candidate}` (against `{baseline}`) in `{context}`"
        else:
            head = f"In `{candidate}` compared with `{baseline}` under `{context}`"
        if not tested:
            continue
        insufficient = all(c.test.verdict == "insufficient data" for c in tested)
        if insufficient:
            text = (f"{head}, too few repetitions to test the {len(tested)} figures (at least 3 per side are "
                    "needed); the tables show the point estimates.")
            out.append(("info", axis, text))
            continue
        if not sig:
            same = [c for c in tested if c.test.verdict == EQUIVALENT]
            margin = tested[0].test.margin_percent
            if len(same) == len(tested):
                text = f"{head}, all {len(tested)} figures are equivalent within ±{margin:g} %"
            else:
                text = (f"{head}, none of the {len(tested)} figures differs significantly; "
                        f"{len(same)} are equivalent within ±{margin:g} %, for the other {len(tested) - len(same)} "
                        "the data cannot tell")
                needed = [c.test.needed_repetitions for c in tested if c.test.needed_repetitions]
                if needed:
                    text += f" (about {min(needed)} to {max(needed)} repetitions per side would decide)"
            if any(c.test.method == LOG_T for c in tested):
                text += (". With fewer than 4 repetitions on a side a rank test cannot reach p < 0.05, so "
                         "Welch's t-test on log values decided; 4 per side allow the rank test")
            out.append(("info", axis, text + "."))
            continue
        worse = [c for c in sig if c.test.worse]
        better = [c for c in sig if not c.test.worse]
        parts = []
        for what, group in (("worse", worse), ("better", better)):
            if group:
                top = max(group, key=lambda c: abs(math.log(c.test.ratio)) if c.test.ratio else 0)
                parts.append(f"{len(group)} {what} (most: `{top.figure}` {_change(kind, top)})")
        out.append(("info", axis, f"{head}, {len(sig)} of {len(tested)} figures differ significantly: "
                                  + "; ".join(parts) + "."))
    return out


def _change(kind: QuantityKind, c) -> str:
    t = c.test
    ci = t.ci_percent
    interval = f", 95 % CI {format_percent(ci[0])} .. {format_percent(ci[1])}" if ci else ""
    return (f"{kind.format(t.baseline_median, c.figure)} -> {kind.format(t.candidate_median, c.figure)}, "
            f"{format_percent(t.overhead_percent)}{interval}")


def number(value: Any) -> float | None:
    """A record field as a float, or None when it is missing, null or not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)
