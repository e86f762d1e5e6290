"""The latency kind's figure names: percentile stems, time units, thresholds, response times.

A leaf of the kind's folder: the decoder and the consideration both name figures this way.
"""

from __future__ import annotations

import re

#: figure stem -> percent, in the probe's naming (p999 = 99.9 %)
PERCENTILES: dict[str, float] = {
    "p50": 50.0, "p90": 90.0, "p99": 99.0, "p999": 99.9,
    "p9999": 99.99, "p99999": 99.999, "p999999": 99.9999,
}
TIME_STEMS = ("min", "avg", "max", "stddev", *PERCENTILES)
TIME_UNITS = {"ns": 1.0, "us": 1e3, "ms": 1e6}
OVER = re.compile(r"over_(\d+(?:\.\d+)?)us")
#: prefix of the response-time figures of a run with a work budget
RESPONSE = "response_"
#: response figures compared between loads and environments, when the runs have them
RESPONSE_COMPARED = ("response_avg_us", "response_p99_us", "response_p999_us", "response_max_us")


def split_cpu_figure(figure: str) -> str:
    """The figure without a `cpu<N>.` prefix (the per-CPU figures are named like the merged ones)."""
    head, dot, rest = figure.partition(".")
    return rest if dot and head.startswith("cpu") and head[3:].isdigit() else figure


def over_figure(threshold_ns: int) -> str:
    """Figure name for the count of samples above a threshold given in ns."""
    us = threshold_ns / 1000
    text = str(threshold_ns // 1000) if threshold_ns % 1000 == 0 else f"{us:.3f}".rstrip("0")
    return f"over_{text}us"


def over_threshold_ns(figure: str) -> float | None:
    m = OVER.fullmatch(figure)
    return float(m.group(1)) * 1000 if m else None
