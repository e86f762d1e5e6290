"""The figures of a result record's distribution: its percentiles, extremes and mean in every time unit.

Apart from the histogram parser (analysis.histogram) because a record usually carries every figure
itself: the parser, and numpy with it, is imported for a record that omits one, so that `show` of
such runs starts without numpy.
"""

from __future__ import annotations

from typing import Any

from rtvbench.units import PERCENTILES, TIME_STEMS, TIME_UNITS


def add_time_figures(out: dict[str, float], r: dict[str, Any], prefix: str = "") -> None:
    """A result record's distribution figures (`<prefix><stem>_<unit>`): the record's own `<stem>_ns`,
    or a percentile read from its histogram when the record omits it. Only numbers count (the
    schema lets some fields be lists). The histogram is parsed only then: records usually carry
    every percentile, and parsing thousands of buckets per record was a fifth of a report's time."""
    hist: Any = False          # the parsed Histogram or None; False: not parsed yet
    for stem in TIME_STEMS:
        ns = r.get(f"{stem}_ns")
        if isinstance(ns, bool) or not isinstance(ns, (int, float)):
            ns = None
        if ns is None and stem in PERCENTILES:
            if hist is False:
                from rtvbench.analysis.histogram import result_histogram
                hist = result_histogram(r)
            if hist is not None:
                ns = hist.percentile(PERCENTILES[stem])
        if ns is None:
            continue
        for unit, scale in TIME_UNITS.items():
            out[f"{prefix}{stem}_{unit}"] = ns / scale
