"""Human formatting of figure values: microseconds with sensible precision, counts, percents."""

from __future__ import annotations

import math

_TIME_SCALE_TO_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6}


def significant(x: float) -> str:
    """Three significant digits, no exponent for the magnitudes latencies have."""
    if x == 0:
        return "0"
    a = abs(x)
    if a >= 100:
        return f"{x:.0f}"
    if a >= 10:
        return f"{x:.1f}"
    if a >= 1:
        return f"{x:.2f}"
    return f"{x:.3g}"


def format_time(value: float | None, unit: str, to: str = "us") -> str:
    """A time given in `unit`, shown in `to` without the unit (for table cells headed with it)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return significant(value * _TIME_SCALE_TO_NS[unit] / _TIME_SCALE_TO_NS[to])


def format_value(value: float | None, unit: str) -> str:
    """A figure value with its unit, times in us: '45.2 us', '3', '1.2e+06 bps'."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if unit in _TIME_SCALE_TO_NS:
        return f"{format_time(value, unit)} us"
    if unit == "count":
        # A mean of counts is fractional; above 1000 the fraction says nothing.
        return f"{value:,.0f}" if float(value).is_integer() or abs(value) >= 1000 else significant(value)
    return f"{significant(value)} {unit}"


def format_percent(value: float | None, signed: bool = True) -> str:
    if value is None or math.isnan(value):
        return "n/a"
    if math.isinf(value):
        return "+inf %" if value > 0 else "-inf %"
    text = significant(value)
    if signed and value > 0:
        text = "+" + text
    return f"{text} %"
