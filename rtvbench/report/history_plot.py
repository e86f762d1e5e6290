"""The figure of `rtvbench history`: a metric's repetitions and medians across runs, one line per cell.

Runs are spaced evenly in the order they were started (the x axis is a sequence of builds or releases,
not calendar time: a month without runs is no information), labelled with their id and tags. Like the
report's plots it draws on an explicit Agg canvas, without pyplot.
"""

from __future__ import annotations

import io
from pathlib import Path

from matplotlib import rc_context
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from rtvbench import file_modes
from rtvbench.analysis.history import History
from rtvbench.analysis.kind import split_cpu
from rtvbench.report.plots import _RC, _label


def run_label(run_id: int, tags: dict[str, str]) -> str:
    return f"#{run_id}" + "".join(f"\n{k}={v}" for k, v in tags.items())


def write_history_plot(h: History, path: Path) -> None:
    """Write the figure to `path`, SVG or PNG by its extension (anything else: SVG)."""
    runs: dict[int, dict[str, str]] = {}
    for s in h.series:
        for p in s.points:
            runs.setdefault(p.run_id, p.tags)
    order = sorted(runs)
    x_of = {r: i for i, r in enumerate(order)}
    unit = h.kind.unit(split_cpu(h.figure)[1])
    with rc_context(_RC):
        fig = Figure(figsize=(max(6.0, 0.6 * len(order) + 2), 4.0))
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        for s in h.series:
            xs = [x_of[p.run_id] for p in s.points]
            line, = ax.plot(xs, [p.median for p in s.points], marker="o", label=_label(f"{s.environment} / {s.load}"))
            for p in s.points:
                ax.plot([x_of[p.run_id]] * len(p.values), p.values, linestyle="none", marker=".",
                        markersize=3, alpha=0.5, color=line.get_color())
                if p.against_previous is not None and p.against_previous.verdict == "significant":
                    ax.annotate(f"{p.against_previous.overhead_percent:+.0f} %", (x_of[p.run_id], p.median),
                                textcoords="offset points", xytext=(4, 6), fontsize=7, color=line.get_color())
        ax.set_xticks(range(len(order)), [run_label(r, runs[r]) for r in order], fontsize=7)
        ax.set_xlabel("run")
        ax.set_ylabel(_label(f"{h.metric}" + (f" ({unit})" if unit and unit != "count" else "")))
        ax.set_title(_label(f"{h.metric} across runs: medians (line), repetitions (dots), significant steps (%)"),
                     fontsize=9)
        ax.legend(fontsize=7)
        fig.tight_layout()
        buf = io.BytesIO()
        if path.suffix.lower() == ".png":
            fig.savefig(buf, format="png", dpi=150)
        else:   # no date in the SVG: the same history gives the same file
            fig.savefig(buf, format="svg", metadata={"Date": None})
    file_modes.make_dirs(path.parent)
    file_modes.replace_file(path, buf.getvalue())
