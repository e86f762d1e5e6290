"""Plots as inline SVG strings: latency histogram, CCDF overlay, per-window maximum over time.

No pyplot: each figure gets an explicit Agg canvas, so nothing here depends on
or changes a process-wide backend (a CLI on a headless board has no display),
and figures are freed with their last reference instead of living in pyplot's
registry. Text stays text in the SVG (svg.fonttype = none), so the report needs
no fonts embedded and names in legends remain searchable.
"""

from __future__ import annotations

import io
import itertools
import re

import numpy as np
from matplotlib import rc_context
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from rtvbench.analysis.histogram import Histogram

_RC = {"svg.fonttype": "none", "svg.hashsalt": "rtvbench", "font.size": 9,
       "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False, "axes.spines.right": False}
_DISPLAY_BINS = 60


def _label(text: str) -> str:
    # matplotlib treats $...$ as mathtext and hides legend labels starting with "_";
    # neither may change how a user's environment name is shown.
    text = text.replace("$", r"\$")
    return "\u200b" + text if text.startswith("_") else text


def _svg(fig: Figure, id_prefix: str) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    svg = buf.getvalue()
    svg = svg[svg.index("<svg"):]          # drop the XML declaration and DOCTYPE: invalid inside HTML
    # Several SVGs share one HTML document, so their ids (clip paths, markers) must not collide.
    prefix = f"{id_prefix}-"
    svg = re.sub(r'id="([^"]+)"', rf'id="{prefix}\1"', svg)
    svg = re.sub(r'url\(#([^)]+)\)', rf'url(#{prefix}\1)', svg)
    svg = re.sub(r'href="#([^"]+)"', rf'href="#{prefix}\1"', svg)
    return svg


def _figure(width: float = 7.0, height: float = 3.2) -> Figure:
    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig


def histogram_svg(curves: list[tuple[str, Histogram]], title: str, id_prefix: str) -> str | None:
    """Counts per display bin on a log latency axis, log count axis, one step line per curve."""
    curves = [(name, h) for name, h in curves if h is not None and h.total]
    if not curves:
        return None
    lo = min(h.lowest() for _, h in curves) / 1000
    hi = max(h.highest() for _, h in curves) / 1000
    lo, hi = max(lo * 0.95, 1e-3), hi * 1.05
    # Rebinned to equal widths on the log axis: the probe's buckets double in width every power of two,
    # which would otherwise show as steps in the counts that are not in the data.
    edges = np.geomspace(lo, hi, _DISPLAY_BINS + 1)
    with rc_context(_RC):
        fig = _figure()
        ax = fig.add_subplot()
        for name, h in curves:
            buckets = h.sorted_buckets()
            mids = np.array([(b[0] + b[1] - 1) / 2000 for b in buckets])
            counts = np.array([b[2] for b in buckets], dtype=float)
            binned, _ = np.histogram(np.clip(mids, lo, hi), bins=edges, weights=counts)
            ax.stairs(binned, edges, label=_label(name), linewidth=1.3)
        ax.set_xscale("log")
        ax.set_yscale("log", nonpositive="clip")
        ax.set_xlabel("latency (us)")
        ax.set_ylabel("samples per bin")
        ax.set_title(_label(title))
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        return _svg(fig, id_prefix)


def ccdf_svg(curves: list[tuple[str, Histogram]], title: str, id_prefix: str) -> str | None:
    """P(latency > x) on a log axis: the tail a histogram flattens is read here directly."""
    curves = [(name, h) for name, h in curves if h is not None and h.total]
    if not curves:
        return None
    with rc_context(_RC):
        fig = _figure()
        ax = fig.add_subplot()
        for name, h in curves:
            pts = h.ccdf()
            x = [h.lowest() / 1000] + [p[0] / 1000 for p in pts] + [h.highest() / 1000]
            y = [1.0] + [p[1] for p in pts] + [1.0 / h.total]
            ax.step(x, y, where="post", label=_label(name), linewidth=1.3)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("latency (us)")
        ax.set_ylabel("fraction of samples above")
        ax.set_title(_label(title))
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        return _svg(fig, id_prefix)


def windows_svg(series: list[tuple[str, list[tuple[list[float], list[float]]]]], title: str,
                id_prefix: str) -> str | None:
    """Per-window maximum over the run time; one line per repetition, one colour per curve name."""
    series = [(name, [r for r in reps if r[0]]) for name, reps in series]
    series = [(name, reps) for name, reps in series if reps]
    if not series:
        return None
    with rc_context(_RC):
        fig = _figure()
        ax = fig.add_subplot()
        colors = itertools.cycle(f"C{i}" for i in range(10))
        for name, reps in series:
            color = next(colors)
            for i, (t, v) in enumerate(reps):
                ax.plot(t, v, color=color, alpha=0.8, linewidth=1.0, marker=".", markersize=3,
                        label=_label(name) if i == 0 else None)
        ax.set_yscale("log")
        ax.set_xlabel("time since measurement start (s)")
        ax.set_ylabel("window max latency (us)")
        ax.set_title(_label(title))
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        return _svg(fig, id_prefix)
