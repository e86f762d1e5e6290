"""The latency kind's figure names: thresholds and response times (percentile stems and time units: rtvbench.units).

A leaf of the kind's folder: the decoder and the consideration both name figures this way.
"""

from __future__ import annotations

import re

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
