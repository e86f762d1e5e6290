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
from contextlib import contextmanager

import numpy as np

from rtvbench.analysis.histogram import Histogram
from rtvbench.units import significant, size_axis_label

_RC = {"svg.fonttype": "none", "svg.hashsalt": "rtvbench", "font.size": 9,
       "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False, "axes.spines.right": False}
_DISPLAY_BINS = 60


def _label(text: str) -> str:
    # matplotlib treats $...$ as mathtext and hides legend labels starting with "_";
    # neither may change how a user's environment name is shown.
    text = text.replace("$", r"\$")
    return "\u200b" + text if text.startswith("_") else text


@contextmanager
def _style():
    """The report's plot style around a figure's drawing. matplotlib is imported here, on the first
    plot: a report without plots (--no-plots, Markdown, JSON) does not pay its import."""
    from matplotlib import rc_context
    with rc_context(_RC):
        yield


def _no_ticks():
    from matplotlib.ticker import NullLocator
    return NullLocator()


def _log(ax, axis: str, minor: bool = True, **kw) -> None:
    """A log axis labelled with plain numbers: matplotlib's default labels (10^k) are typeset by its
    mathtext parser, which took a quarter of a large report's time. Minor ticks, unlabelled, at 2 and 5
    times each power of ten, or none (`minor=False`) on axes of counts and shares, read by their order
    of magnitude across many decades: there the default eight per decade were 60-odd tick objects per
    axis and 40 % of a large report's time."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    getattr(ax, f"set_{axis}scale")("log", **kw)
    target = getattr(ax, f"{axis}axis")
    target.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    target.set_minor_locator(LogLocator(subs=(2.0, 5.0)) if minor else _no_ticks())
    target.set_minor_formatter(NullFormatter())


def _svg(fig, id_prefix: str) -> str:
    from matplotlib import rcParams
    buf = io.StringIO()
    # The tight box from the Agg canvas's renderer, which lays the text out without drawing: given
    # bbox_inches="tight", savefig would first draw the whole SVG once to find it.
    tight = fig.get_tightbbox(fig.canvas.get_renderer()).padded(rcParams["savefig.pad_inches"])
    fig.savefig(buf, format="svg", bbox_inches=tight, metadata={"Date": None})
    svg = buf.getvalue()
    svg = svg[svg.index("<svg"):]          # drop the XML declaration and DOCTYPE: invalid inside HTML
    # Several SVGs share one HTML document, so their ids (clip paths, markers) must not collide.
    prefix = f"{id_prefix}-"
    svg = re.sub(r'id="([^"]+)"', rf'id="{prefix}\1"', svg)
    svg = re.sub(r'url\(#([^)]+)\)', rf'url(#{prefix}\1)', svg)
    svg = re.sub(r'href="#([^"]+)"', rf'href="#{prefix}\1"', svg)
    return svg


def _figure(width: float = 7.0, height: float = 3.2):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig


def _mids_us(h: Histogram) -> np.ndarray:
    """Each bucket's middle value in microseconds (a bucket holds lo <= v < hi)."""
    return (h.lo + h.hi - 1) / 2000


#: more curves than this are drawn as small multiples rather than overlaid: beyond it lines cross and
#: colours are hard to tell apart (and the default cycle repeats after ten)
MAX_OVERLAY = 4
SMALL_MULTIPLE_COLUMNS = 3
#: curves one histogram or CCDF plot draws at most (a cyclictest of 128 threads has 128): the panels
#: would be unreadable and their cost grows faster than their number (200 panels: about a minute, 24
#: about a second)
MAX_CURVES = 24


def _drawn(curves: list[tuple[str, Histogram | None]], title: str) -> tuple[list[tuple[str, Histogram]], str]:
    """The curves with samples, at most MAX_CURVES of them: those with the longest tails, which a
    latency evaluation looks for, in their order; the title says when some were left out."""
    curves = [(name, h) for name, h in curves if h is not None and h.total]
    if len(curves) <= MAX_CURVES:
        return curves, title
    kept = {name for name, _ in sorted(curves, key=lambda c: c[1].highest(), reverse=True)[:MAX_CURVES]}
    return ([(name, h) for name, h in curves if name in kept],
            f"{title} — the {MAX_CURVES} of {len(curves)} with the longest tails")


def histogram_svg(curves: list[tuple[str, Histogram]], title: str, id_prefix: str,
                  xlabel: str = "latency (us)") -> str | None:
    """Counts per display bin on a log latency axis, log count axis: one step line per curve, or one
    panel per curve on shared axes when there are more than MAX_OVERLAY."""
    fig = histogram_figure(curves, title, xlabel)
    with _style():
        return None if fig is None else _svg(fig, id_prefix)


def histogram_figure(curves: list[tuple[str, Histogram]], title: str, xlabel: str = "latency (us)"):
    curves, title = _drawn(curves, title)
    if not curves:
        return None
    lo = min(h.lowest() for _, h in curves) / 1000
    hi = max(h.highest() for _, h in curves) / 1000
    lo, hi = max(lo * 0.95, 1e-3), hi * 1.05
    # Rebinned to equal widths on the log axis: the probe's buckets double in width every power of two,
    # which would otherwise show as steps in the counts that are not in the data.
    edges = np.geomspace(lo, hi, _DISPLAY_BINS + 1)

    def binned(h: Histogram) -> np.ndarray:
        return np.histogram(np.clip(_mids_us(h), lo, hi), bins=edges, weights=h.count.astype(float))[0]

    with _style():
        if len(curves) <= MAX_OVERLAY:
            fig = _figure()
            ax = fig.add_subplot()
            for name, h in curves:
                ax.stairs(binned(h), edges, label=_label(name), linewidth=1.3)
            ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
            axes = [ax]
            ax.set_title(_label(title))
        else:
            cols = SMALL_MULTIPLE_COLUMNS
            rows = -(-len(curves) // cols)
            fig = _figure(7.0, 1.9 * rows + 0.6)
            grid = fig.subplots(rows, cols, sharex=True, sharey=True, squeeze=False)
            axes = list(grid.flat)
            for ax, (name, h) in zip(axes, curves):
                ax.stairs(binned(h), edges, linewidth=1.1, color="C0")
                ax.set_title(_label(name), fontsize=8)
            for ax in axes[len(curves):]:
                ax.set_visible(False)
            axes = axes[:len(curves)]
            fig.suptitle(_label(title))
        for ax in axes:
            _log(ax, "x")
            _log(ax, "y", minor=False, nonpositive="clip")
            ax.set_xlim(lo, hi)
        axes[-1].set_xlabel(xlabel)
        axes[0].set_ylabel("samples per bin")
        return fig


def per_cpu_histogram_svg(curves: list[tuple[str, Histogram | None]], title: str, id_prefix: str) -> str | None:
    """The OSADL latency plot: samples per latency bin on a linear latency axis, log count, one step
    line per CPU, and each CPU's maximum marked by a dashed line of its colour (with a single CPU, the
    histogram of the merged result says the same: nothing to draw)."""
    curves = [(name, h) for name, h in curves if h is not None and h.total]
    if len(curves) < 2:
        return None
    hi = max(h.highest() for _, h in curves) / 1000 * 1.02
    edges = np.linspace(0.0, max(hi, 1e-3), _DISPLAY_BINS * 2 + 1)
    with _style():
        fig = _figure()
        ax = fig.add_subplot()
        for i, (name, h) in enumerate(curves):
            binned, _ = np.histogram(np.clip(_mids_us(h), edges[0], edges[-1]), bins=edges,
                                     weights=h.count.astype(float))
            top = h.highest() / 1000
            ax.stairs(binned, edges, label=_label(f"{name} (max {significant(top)} us)"), linewidth=1.2,
                      color=f"C{i % 10}")
            ax.axvline(top, color=f"C{i % 10}", linestyle="--", linewidth=0.8)
        _log(ax, "y", minor=False, nonpositive="clip")
        ax.set_xlim(0, edges[-1])
        ax.set_xlabel("latency (us)")
        ax.set_ylabel("samples per bin")
        ax.set_title(_label(title))
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        return _svg(fig, id_prefix)


def ccdf_svg(curves: list[tuple[str, Histogram]], title: str, id_prefix: str,
             xlabel: str = "latency (us)") -> str | None:
    """P(latency > x) on a log axis: the tail a histogram flattens is read here directly."""
    curves, title = _drawn(curves, title)
    if not curves:
        return None
    with _style():
        fig = _figure()
        ax = fig.add_subplot()
        for name, h in curves:
            pts = h.ccdf()
            x = [h.lowest() / 1000] + [p[0] / 1000 for p in pts] + [h.highest() / 1000]
            y = [1.0] + [p[1] for p in pts] + [1.0 / h.total]
            ax.step(x, y, where="post", label=_label(name), linewidth=1.3)
        _log(ax, "x")
        _log(ax, "y", minor=False)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("fraction of samples above")
        ax.set_title(_label(title))
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        return _svg(fig, id_prefix)


def windows_svg(series: list[tuple[str, list[tuple[list[float], list[float]]]]], title: str,
                id_prefix: str, ylabel: str = "window max latency (us)") -> str | None:
    """Per-window maximum over the run time; one line per repetition, one colour per curve name."""
    series = [(name, [r for r in reps if r[0]]) for name, reps in series]
    series = [(name, reps) for name, reps in series if reps]
    if not series:
        return None
    with _style():
        fig = _figure()
        ax = fig.add_subplot()
        colors = itertools.cycle(f"C{i}" for i in range(10))
        for name, reps in series:
            color = next(colors)
            for i, (t, v) in enumerate(reps):
                ax.plot(t, v, color=color, alpha=0.8, linewidth=1.0, marker=".", markersize=3,
                        label=_label(name) if i == 0 else None)
        _log(ax, "y")
        ax.set_xlabel("time since measurement start (s)")
        ax.set_ylabel(ylabel)
        ax.set_title(_label(title))
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        return _svg(fig, id_prefix)


def size_curves_svg(series: list[tuple[str, list[tuple[float, float, float, float]]]], title: str,
                    ylabel: str, id_prefix: str, xlabel: str = "working-set size (bytes)",
                    logy: bool = True) -> str | None:
    """One line per series over a log2 size axis: (size, median, min, max) points, min..max shaded.

    The y values are plotted as given (the caller picks the unit); sizes are labelled 512, 4K, 1M ...
    """
    series = [(name, sorted(pts)) for name, pts in series if pts]
    if not series:
        return None
    with _style():
        fig = _figure(7.0, 3.6)
        ax = fig.add_subplot()
        for name, pts in series:
            x = [p[0] for p in pts]
            line, = ax.plot(x, [p[1] for p in pts], marker=".", markersize=4, linewidth=1.3, label=_label(name))
            if any(p[2] != p[3] for p in pts):
                ax.fill_between(x, [p[2] for p in pts], [p[3] for p in pts], color=line.get_color(), alpha=0.15,
                                linewidth=0)
        ax.set_xscale("log", base=2)
        if logy:
            _log(ax, "y")
        lo = min(p[0] for _, pts in series for p in pts)
        hi = max(p[0] for _, pts in series for p in pts)
        ticks = [2.0 ** k for k in range(int(np.floor(np.log2(lo))), int(np.ceil(np.log2(hi))) + 1)]
        if len(ticks) > 12:
            step = int(np.ceil(len(ticks) / 12))
            ticks = ticks[::step]
        ax.set_xticks(ticks, [size_axis_label(t) for t in ticks])
        ax.xaxis.set_minor_locator(_no_ticks())
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(_label(title))
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        return _svg(fig, id_prefix)


def normalised_bars_svg(labels: list[str], series: list[tuple[str, list[float | None], list[tuple[float, float] | None]]],
                        title: str, baseline: str, id_prefix: str) -> str | None:
    """Grouped bars: per label (a workload), one bar per series (a candidate) of its value normalised to the
    baseline (1.0, drawn as a line), with the 95 % interval as an error bar where there is one."""
    series = [s for s in series if any(v is not None for v in s[1])]
    if not labels or not series:
        return None
    with _style():
        fig = _figure(max(7.0, 0.35 * len(labels) * len(series) + 2), 3.8)
        ax = fig.add_subplot()
        width = 0.8 / len(series)
        x = np.arange(len(labels))
        for k, (name, values, cis) in enumerate(series):
            pos = x - 0.4 + width * (k + 0.5)
            heights = [v if v is not None else np.nan for v in values]
            err_lo = [v - ci[0] if v is not None and ci else 0 for v, ci in zip(values, cis)]
            err_hi = [ci[1] - v if v is not None and ci else 0 for v, ci in zip(values, cis)]
            ax.bar(pos, heights, width * 0.9, label=_label(name), yerr=[err_lo, err_hi], capsize=2,
                   error_kw={"linewidth": 0.8})
        ax.axhline(1.0, color="black", linewidth=1.0, linestyle="--")
        ax.text(1.0, 1.0, f" {_label(baseline)} = 1", transform=ax.get_yaxis_transform(), va="center", fontsize=8)
        ax.set_xticks(x, [_label(lbl) for lbl in labels], rotation=45, ha="right")
        ax.set_ylabel(f"time normalised to {_label(baseline)}")
        ax.set_title(_label(title))
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        return _svg(fig, id_prefix)


def vm_count_svg(panels: list[tuple[str, str, list[tuple[str, list[tuple[int, float, float, float]]]]]],
                 title: str, id_prefix: str) -> str | None:
    """Figures against the number of VMs (latency against 0..5 VMs, 0 = the machine itself): a panel
    per (label, y label, series), one line per load through the medians, the min..max of the
    repetitions as error bars, integer counts on the x axis."""
    fig = vm_count_figure(panels, title)
    with _style():
        return None if fig is None else _svg(fig, id_prefix)


def vm_count_figure(panels, title: str):
    panels = [(label, ylabel, [(name, sorted(pts)) for name, pts in series if len(pts) >= 2])
              for label, ylabel, series in panels]
    panels = [p for p in panels if p[2]]
    if not panels:
        return None
    with _style():
        cols = 1 if len(panels) == 1 else 2
        rows = -(-len(panels) // cols)
        fig = _figure(7.0 if cols > 1 else 6.0, 2.6 * rows + 0.6)
        grid = fig.subplots(rows, cols, squeeze=False)
        axes = list(grid.flat)
        for ax, (label, ylabel, series) in zip(axes, panels):
            for k, (name, pts) in enumerate(series):
                x = [p[0] for p in pts]
                med = np.array([p[1] for p in pts])
                err = np.array([[m - p[2] for m, p in zip(med, pts)], [p[3] - m for m, p in zip(med, pts)]])
                ax.errorbar(x, med, yerr=err, marker="o", markersize=3, linewidth=1.2, capsize=3,
                            color=f"C{k % 10}", label=_label(name))
            counts = sorted({p[0] for _, pts in series for p in pts})
            ax.set_xticks(counts, [str(c) for c in counts])
            ax.xaxis.set_minor_locator(_no_ticks())
            ax.set_ylabel(_label(ylabel), fontsize=8)
            ax.set_ylim(bottom=0)
            ax.set_title(_label(label), fontsize=9)
        for ax in axes[len(panels):]:
            ax.set_visible(False)
        for ax in axes[:len(panels)][-cols:]:
            ax.set_xlabel("number of VMs (0: the machine itself)")
        axes[0].legend(fontsize=8, loc="upper left", bbox_to_anchor=(0.0, -0.25 if rows == 1 else 1.25),
                       frameon=False, ncols=4)
        fig.suptitle(_label(title))
        return fig
