"""A cell's history as an inline SVG drawn by hand: the site has thousands of them, and matplotlib
takes tens of milliseconds for each where a string takes well under one (docs/publish.md).

Runs are spaced evenly, oldest on the left; each run's repetitions as a grey bar from the lowest to
the highest, its median as a point of the line, each change point as a dashed red line between the
two runs it lies between. Every point has a <title>, which browsers show on hover without a script."""

from __future__ import annotations

from html import escape

WIDTH, HEIGHT = 760, 230
LEFT, RIGHT, TOP, BOTTOM = 70, 15, 15, 35


def history_svg(points, steps, fmt) -> str:
    """points: the cell's analysis.history.Point list; steps: the indices of its change points;
    fmt: a value's text with its unit."""
    lows = [min(p.values) for p in points]
    highs = [max(p.values) for p in points]
    lo, hi = min(lows), max(highs)
    if hi == lo:
        lo, hi = lo - abs(lo) * 0.05 - 1e-9, hi + abs(hi) * 0.05 + 1e-9
    pad = (hi - lo) * 0.08
    lo, hi = lo - pad, hi + pad
    n = len(points)
    span_x = WIDTH - LEFT - RIGHT

    def x(i: float) -> float:
        return LEFT + (span_x / 2 if n == 1 else span_x * i / (n - 1))

    def y(v: float) -> float:
        return TOP + (HEIGHT - TOP - BOTTOM) * (hi - v) / (hi - lo)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="history" viewBox="0 0 {WIDTH} {HEIGHT}" '
             f'width="{WIDTH}" height="{HEIGHT}" role="img">',
             f'<line x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" y2="{HEIGHT - BOTTOM}" stroke="#888"/>',
             f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}" stroke="#888"/>']
    for v in (lo + pad, hi - pad):
        parts.append(f'<text x="{LEFT - 6}" y="{y(v) + 4:.1f}" text-anchor="end" font-size="11">{escape(fmt(v))}</text>')
    for i in sorted({0, n - 1}):
        parts.append(f'<text x="{x(i):.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle" font-size="11">'
                     f'#{points[i].run_id}</text>')
    for i in steps:
        xm = (x(i - 1) + x(i)) / 2
        parts.append(f'<line class="change" x1="{xm:.1f}" y1="{TOP}" x2="{xm:.1f}" y2="{HEIGHT - BOTTOM}" '
                     f'stroke="#c0392b" stroke-dasharray="5,3"><title>change between #{points[i - 1].run_id} '
                     f'and #{points[i].run_id}</title></line>')
        parts.append(f'<text x="{xm + 3:.1f}" y="{TOP + 10}" font-size="11" fill="#c0392b">'
                     f'#{points[i - 1].run_id}&#8594;#{points[i].run_id}</text>')
    for i, (a, b) in enumerate(zip(lows, highs)):
        parts.append(f'<line x1="{x(i):.1f}" y1="{y(a):.1f}" x2="{x(i):.1f}" y2="{y(b):.1f}" stroke="#bbb" stroke-width="3"/>')
    line = " ".join(f"{x(i):.1f},{y(p.median):.1f}" for i, p in enumerate(points))
    parts.append(f'<polyline points="{line}" fill="none" stroke="#2c6fbb" stroke-width="1.5"/>')
    for i, p in enumerate(points):
        tags = " ".join(f"{k}={v}" for k, v in p.tags.items())
        parts.append(f'<circle cx="{x(i):.1f}" cy="{y(p.median):.1f}" r="2.5" fill="#2c6fbb"><title>'
                     f'#{p.run_id} {escape(tags)}: median {escape(fmt(p.median))} '
                     f'({escape(fmt(lows[i]))} .. {escape(fmt(highs[i]))})</title></circle>')
    parts.append("</svg>")
    return "".join(parts)
