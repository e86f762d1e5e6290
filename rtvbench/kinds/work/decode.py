"""The `work` kind: self-verifying CPU workloads (docs/probe/work.md).

Figures per kernel and input size, e.g. for sha256 at the large size:
`sha256.large` (median run time, ns; `_us`, `_ms`), `sha256.large.min` (fastest run),
`sha256.large.ops_per_s`, and for byte kernels `sha256.large.bw` (bytes/s; `_MBps`, `_GBps`),
for flop kernels `lu.large.flops` (flop/s). With `copies` N >= 2: `sha256.large.single_ips`
(runs/s of one copy alone), `sha256.large.copies_ips` (runs/s of N copies together) and
`sha256.large.speedup` (median over the probe's round pairs of the N copies' runs/s / one copy's) and
`sha256.large.scaling_efficiency` (the same pairs' copies_ips / (N x single_ips): speedup / N).

Rates on the scale of published scores, of this project's own workloads (docs/probe/work.md,
"Rates on the scale of published scores"): `intmix.<size>.dmips_style` (iterations/s / 1757),
`fpmix.<size>.mwips_style` (the loop's counted operations per second / 10^6) and, with copies,
`coremark_style.<size>.single` and `coremark_style.<size>.copies` (geometric mean over the
measurement's kernels at that size of single_ips and copies_ips, runs/s). They are NOT the scores
of Dhrystone, Whetstone or CoreMark, whose programs are not run.

A result whose verification failed (`verified` not true) yields no figure at all: the time of
a wrong computation is not a measurement. The consideration names every such failure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from rtvbench.analysis.kind import register
from rtvbench.analysis.quantities import BANDWIDTH, COUNT, RATE, TIME, QuantityKind, number
from rtvbench.catalog import WORK_KERNELS, WORK_SIZES
from rtvbench.results import Measurement

_STEM = re.compile(r"^([a-z0-9_]+)\.(small|large)"
                   r"(?:\.(min|ops_per_s|bw|flops|single_ips|copies_ips|speedup|scaling_efficiency|dmips_style|"
                   r"mwips_style))?$")
_COMPOSITE = re.compile(r"^coremark_style\.(small|large)\.(single|copies)$")
#: Dhrystones per second of the VAX-11/780, the machine rated 1 MIPS: a DMIPS figure is Dhrystones/s / 1757
VAX_DHRYSTONES_PER_S = 1757
#: the kernel whose iterations a style figure counts, and the figure's unit
STYLE_RATES = {"dmips_style": ("intmix", "DMIPS-style"), "mwips_style": ("fpmix", "MWIPS-style")}
_KERNEL_ORDER = {k: i for i, k in enumerate(WORK_KERNELS)}


@dataclass(frozen=True)
class Check:
    """The verification of one kernel at one size in one measurement."""
    workload: str              # "crc32.small"
    verified: bool | None      # None: the probe printed no result for it
    error: str | None


def verification(m: Measurement) -> list[Check]:
    """Every kernel.size result of a measurement with its verification, in the probe's order."""
    out = []
    for r in m.results:
        kernel, size = r.get("kernel"), r.get("size")
        if kernel in WORK_KERNELS and size in WORK_SIZES:
            verified = r.get("verified")
            out.append(Check(f"{kernel}.{size}", verified if isinstance(verified, bool) else None,
                             r.get("error") if isinstance(r.get("error"), str) else None))
    return out


def style_rates(r: dict[str, Any]) -> dict[str, float]:
    """The DMIPS- or MWIPS-style rate of a verified intmix or fpmix result, from its operation count
    and median run time: intmix's iterations per second / 1757, fpmix's counted operations per
    second / 10^6 (each of its 51 per iteration, a libm call included, counts one)."""
    ops, median_ns = number(r.get("ops")), number(r.get("median_ns"))
    if ops is None or median_ns is None or ops <= 0 or median_ns <= 0:
        return {}
    per_s = ops * 1e9 / median_ns
    stem = f"{r.get('kernel')}.{r.get('size')}"
    if r.get("kernel") == "intmix":
        return {f"{stem}.dmips_style": per_s / VAX_DHRYSTONES_PER_S}
    if r.get("kernel") == "fpmix":
        return {f"{stem}.mwips_style": per_s / 1e6}
    return {}


def coremark_style(m: Measurement) -> dict[str, float]:
    """The composite of a multi-copy measurement, per size: the geometric mean over its kernels of
    runs/s of one copy (`.single`) and of the N copies together (`.copies`). A size where any kernel
    failed or lacks a rate has none: a mean over fewer kernels is another composite."""
    rates: dict[str, list[tuple[float | None, float | None]]] = {}
    for r in m.results:
        if r.get("kernel") in WORK_KERNELS and r.get("size") in WORK_SIZES and isinstance(r.get("copies"), int) \
                and r["copies"] > 1:
            ok = r.get("verified") is True
            rates.setdefault(r["size"], []).append(
                (number(r.get("single_ips")) if ok else None, number(r.get("copies_ips")) if ok else None))
    out = {}
    for size, pairs in rates.items():
        for i, tail in enumerate(("single", "copies")):
            values = [p[i] for p in pairs]
            if all(v is not None and v > 0 for v in values):
                out[f"coremark_style.{size}.{tail}"] = _geometric_mean(values)
    return out


def _geometric_mean(values: list[float]) -> float:
    # numpy here, not with the decoder: only a multi-copy measurement and the report's summary need it,
    # and `show` of other runs starts without numpy.
    import numpy as np

    return float(np.exp(np.mean(np.log(values))))


class WorkKind(QuantityKind):
    name = "work"

    def quantities(self, m: Measurement) -> dict[str, tuple[str, float]]:
        out: dict[str, tuple[str, float]] = {}

        def add(stem: str, family: str, value: Any) -> None:
            v = number(value)
            if v is not None:
                out[stem] = (family, v)

        for r in m.results:
            kernel, size = r.get("kernel"), r.get("size")
            if kernel not in WORK_KERNELS or size not in WORK_SIZES or r.get("verified") is not True:
                continue
            for stem, value in style_rates(r).items():
                add(stem, COUNT, value)
            stem = f"{kernel}.{size}"
            add(stem, TIME, r.get("median_ns"))
            add(stem + ".min", TIME, r.get("min_ns"))
            add(stem + ".ops_per_s", RATE, r.get("ops_per_s"))
            if WORK_KERNELS[kernel] == "byte":
                add(stem + ".bw", BANDWIDTH, r.get("bps"))
            if WORK_KERNELS[kernel] == "flop":
                add(stem + ".flops", RATE, r.get("flops"))
            if isinstance(r.get("copies"), int) and r["copies"] > 1:
                add(stem + ".single_ips", RATE, r.get("single_ips"))
                add(stem + ".copies_ips", RATE, r.get("copies_ips"))
                add(stem + ".scaling_efficiency", COUNT, r.get("scaling_efficiency"))
                # The speedup of the same round pairs: N x their median efficiency is the median of
                # their N-copies / 1-copy ratios, so the two never disagree. The quotient of the
                # runs/s medians would not be it: those are medians of different rounds.
                eff = number(r.get("scaling_efficiency"))
                if eff is not None:
                    add(stem + ".speedup", COUNT, eff * r["copies"])
        for stem, value in coremark_style(m).items():
            add(stem, RATE, value)
        return out

    def family(self, stem: str) -> str | None:
        if _COMPOSITE.match(stem):
            return RATE
        m = _STEM.match(stem)
        if not m or m.group(1) not in WORK_KERNELS:
            return None
        op, tail = WORK_KERNELS[m.group(1)], m.group(3)
        if tail in STYLE_RATES:
            return COUNT if STYLE_RATES[tail][0] == m.group(1) else None
        if tail in (None, "min"):
            return TIME
        if tail in ("ops_per_s", "single_ips", "copies_ips") or (tail == "flops" and op == "flop"):
            return RATE
        if tail in ("speedup", "scaling_efficiency"):
            return COUNT
        if tail == "bw" and op == "byte":
            return BANDWIDTH
        return None

    def lower_is_better(self, figure: str) -> bool:
        # A speedup or an efficiency is a plain number (the count family, where fewer is better) but more
        # is better, as are the rates.
        return (not figure.endswith((".speedup", ".scaling_efficiency", ".dmips_style", ".mwips_style"))
                and super().lower_is_better(figure))

    def unit(self, figure: str) -> str:
        tail = figure.rpartition(".")[2]
        return STYLE_RATES[tail][1] if tail in STYLE_RATES and self.split(figure) else super().unit(figure)

    def headline(self, stem: str) -> bool:
        m = _STEM.match(stem)
        return bool(m) and m.group(3) is None

    def order(self, stem: str) -> tuple:
        composite = _COMPOSITE.match(stem)
        if composite:
            return (len(WORK_KERNELS), WORK_SIZES.index(composite.group(1)), composite.group(2))
        m = _STEM.match(stem)
        if not m:
            return (999, stem)
        return (_KERNEL_ORDER.get(m.group(1), 999), WORK_SIZES.index(m.group(2)), m.group(3) or "")

    def rate_unit(self, stem: str) -> str:
        if stem.endswith((".single_ips", ".copies_ips")) or _COMPOSITE.match(stem):
            return "runs/s"
        return "flop/s" if stem.endswith(".flops") else "ops/s"

    def label(self, figure: str) -> str:
        parts = self.split(figure)
        composite = _COMPOSITE.match(parts[0]) if parts else None
        if composite:
            return (f"CoreMark-style composite ({composite.group(1)}), "
                    + ("1 copy" if composite.group(2) == "single" else "all copies"))
        m = _STEM.match(parts[0]) if parts else None
        if not m:
            return figure
        tail = {"min": " fastest run", "ops_per_s": " ops/s", "bw": " bandwidth", "flops": " flop/s",
                "single_ips": " runs/s, 1 copy", "copies_ips": " runs/s, all copies",
                "speedup": " speedup, all copies / 1", "scaling_efficiency": " scaling efficiency",
                **{tail: f" {unit} rate" for tail, (_, unit) in STYLE_RATES.items()}}
        return f"{m.group(1)} ({m.group(2)}){tail.get(m.group(3), '')}"

    def describe(self, benchmark: dict[str, Any], params: dict[str, Any] | None) -> str:
        p = params or {}
        kernels = p.get("kernels") or benchmark.get("kernels") or "all"
        names = ", ".join(kernels) if isinstance(kernels, list) else "every kernel"
        sizes = p.get("sizes") or ([benchmark["size"]] if benchmark.get("size") in WORK_SIZES else list(WORK_SIZES))
        reps = p.get("repetitions") or benchmark.get("repetitions") or 3
        seed = p.get("seed", benchmark.get("seed", 1))
        return (f"CPU workloads of the MiBench, Dhrystone, Whetstone and Linpack families, written for rtvbench "
                f"(not comparable with those programs' scores): {names}, at the {' and '.join(sizes)} input "
                f"size{'s' if len(sizes) > 1 else ''}, inputs generated from seed {seed}. Each kernel is timed over "
                f"{reps} run{'s' if reps != 1 else ''} per measurement and its figure is the median run "
                "time; every run checks its own output and compares a checksum with the known value, so a "
                "machine that computes a wrong result fails the measurement instead of reporting a fast wrong "
                "number. Workloads are normalised to the baseline environment as the ratio of the median times "
                "over repetitions (above 1: slower than the baseline).")

    def key_result(self, data, bench: str, env: str, load: str) -> str:
        checks = [c for m in data.measurements(env, load, bench) for c in verification(m)]
        failed = sorted({c.workload for c in checks if c.verified is False})
        if failed:
            return f"FAILED verification: {', '.join(failed)}"
        workloads = {c.workload for c in checks}
        return f"{len(workloads)} workload{'s' if len(workloads) != 1 else ''}, verified in every run" if checks else ""

    def extra_considerations(self, data, bench: str, comps: list) -> list[tuple[str, str, str]]:
        failed: dict[str, list] = {}
        for m in data.measurements(benchmark=bench):
            for c in verification(m):
                if c.verified is False:
                    failed.setdefault(c.workload, []).append((m, c))
        out = []
        for workload, runs in sorted(failed.items(), key=lambda kv: self.order(kv[0])):
            where = ", ".join(f"`{m.environment}` under `{m.load}` repetition {m.repetition + 1}" for m, _ in runs)
            reasons = list(dict.fromkeys(c.error or "verification failed" for _, c in runs))
            out.append(("warning", "verification",
                        f"FAILED MEASUREMENT: workload `{workload}` computed a wrong result in {len(runs)} "
                        f"run{'s' if len(runs) != 1 else ''} ({where}): {'; '.join(reasons)}. Its time is not a "
                        "measurement; those repetitions are left out of every summary and comparison."))
        return out + _normalised(self, comps)


def _normalised(kind: WorkKind, comps: list) -> list[tuple[str, str, str]]:
    """The normalised summary: each candidate's run times as a multiple of the baseline's."""
    groups: dict[tuple, list] = {}
    for c in comps:
        if c.axis == "environment" and c.test.ratio is not None and c.test.ratio > 0:
            groups.setdefault((c.context, c.baseline, c.candidate), []).append(c)
    out = []
    for (load, baseline, candidate), cs in groups.items():
        ratios = [c.test.ratio for c in cs]
        geo = _geometric_mean(ratios)
        lo, hi = min(cs, key=lambda c: c.test.ratio), max(cs, key=lambda c: c.test.ratio)
        text = (f"Normalised to `{baseline}` under `{load}`, `{candidate}` takes {geo:.3g}x the time "
                f"(geometric mean over {len(cs)} workload{'s' if len(cs) != 1 else ''}")
        if len(cs) > 1:
            text += (f"; from {lo.test.ratio:.3g}x for {kind.label(lo.figure)} to "
                     f"{hi.test.ratio:.3g}x for {kind.label(hi.figure)}")
        out.append(("info", "environment", text + ")."))
    return out


register(WorkKind())
