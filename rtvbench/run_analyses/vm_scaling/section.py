"""The report's plot of every compared figure, and of what the guests cost the host, against the
number of VMs, in each benchmark's section."""

from __future__ import annotations

from rtvbench.analysis.evaluation import Evaluation
from rtvbench.report import plots
from rtvbench.report.run_section import RUN_SECTIONS, RunSection
from rtvbench.report.tables import Plot
from rtvbench.run_analyses.vm_scaling.analysis import VM_SCALING, VmScaling
from rtvbench.units import suffix_unit


def vm_scaling_plots(ev: Evaluation, part: VmScaling, bench: str, id_prefix: str) -> list[Plot]:
    """Every compared figure against the number of VMs, a panel per figure, one line per load (and per
    guest when several are scaled), the machine itself as 0 VMs."""
    kind = ev.data.kind(bench)
    if kind is None:
        return []
    series = part.series[bench]
    figures = list(dict.fromkeys(s.figure for s in series))

    def guests(s) -> list:
        return [p for p in s.points if p.count > 0]
    several_guests = len({guests(s)[0].environment for s in series if guests(s)}) > 1
    panels = []
    for figure in figures:
        lines = [(s.load + (f" ({guests(s)[0].environment} .. {guests(s)[-1].environment})" if several_guests else ""),
                  [(p.count, p.median, p.low, p.high) for p in s.points])
                 for s in series if s.figure == figure]
        unit = suffix_unit(figure)
        panels.append((kind.label(figure), "us" if unit in ("ns", "us", "ms") else unit, lines))
    # What the guests cost the host, beside the figures: each VM more is another QEMU.
    for what, label, unit in (("cpu", "host CPU of all the guests' QEMU", "%"),
                              ("pss", "QEMU memory of all the guests (PSS)", "MiB")):
        lines = [(load, points) for load, w, points in part.host[bench] if w == what]
        if lines:
            panels.append((label, unit, lines))
    svg = plots.vm_count_svg(panels, f"{bench} against the number of VMs", f"{id_prefix}v")
    if not svg:
        return []
    return [Plot("Every compared figure against the number of VMs (median of the repetitions, min..max bars; "
                 "0 is the machine itself, the benchmark runs in the first VM, `neighbours` loads in the others)",
                 svg)]


RUN_SECTIONS.register("vm_scaling")(RunSection(VM_SCALING, bench_plots=vm_scaling_plots))
