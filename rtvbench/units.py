"""Human formatting of figure values: microseconds with sensible precision, counts, percents."""

from __future__ import annotations

import math

#: figure stem -> percent, in the probe's naming (p999 = 99.9 %)
PERCENTILES: dict[str, float] = {
    "p50": 50.0, "p90": 90.0, "p99": 99.0, "p999": 99.9,
    "p9999": 99.99, "p99999": 99.999, "p999999": 99.9999,
}
#: the figures of a distribution the probe summarises (latencies, gaps), each in TIME_UNITS
TIME_STEMS = ("min", "avg", "max", "stddev", *PERCENTILES)
TIME_UNITS = {"ns": 1.0, "us": 1e3, "ms": 1e6}

def suffix_unit(figure: str) -> str:
    """The unit a figure's value is in, read from the suffix of its name (`max_us` -> "us")."""
    for suffix in ("ns", "us", "ms", "bps", "per_s"):
        if figure.endswith("_" + suffix):
            return suffix
    return "count"


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
    return significant(value * TIME_UNITS[unit] / TIME_UNITS[to])


#: how a byte rate is shown, with its divisor from B/s: one unit for a tool's every block size, so a
#: column compares at a glance, and the one openssl speed's kB/s reads as (1 MB/s = 1000 kB/s)
BYTE_RATE_SHOWN = ("MB/s", 1e6)


def format_value(value: float | None, unit: str) -> str:
    """A figure value with its unit, times in us: '45.2 us', '3', '1.2e+06 bps'."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if unit in TIME_UNITS:
        return f"{format_time(value, unit)} us"
    if unit == "B/s":
        return f"{significant(value / BYTE_RATE_SHOWN[1])} {BYTE_RATE_SHOWN[0]}"
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


# ---------------------------------------------------------------------------
# Sizes and the units of the measurement-suite kinds (mem-lat, mem-bw, os, ipc, work)

_SIZE_UNITS = (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))


def size_token(n: int) -> str:
    """A byte count as it appears inside a figure name: "64MiB", "48KiB", "1536B".

    The largest binary unit that divides the size exactly, so that a name never needs a
    decimal point (a dot separates the parts of a figure name) and every size has exactly
    one name: 1.5 MiB is "1536KiB".
    """
    for suffix, scale in _SIZE_UNITS:
        if n >= scale and n % scale == 0:
            return f"{n // scale}{suffix}"
    return f"{n}B"


def parse_size_token(token: str) -> int | None:
    """The inverse of size_token; None unless `token` is exactly a canonical size name."""
    for suffix, scale in _SIZE_UNITS + (("B", 1),):
        if token.endswith(suffix):
            digits = token[:-len(suffix)]
            if digits.isdigit() and (digits == "0" or not digits.startswith("0")):
                n = int(digits) * scale
                return n if size_token(n) == token else None
            return None
    return None


def human_size(n: float) -> str:
    """A byte count for sentences and axes: "48 KiB", "1.5 MiB", "512 B"."""
    for suffix, scale in _SIZE_UNITS:
        if n >= scale:
            return f"{n / scale:g} {suffix}"
    return f"{n:g} B"


def measured_size(n: float) -> str:
    """A measured byte count to three digits ("5.12 MiB"); a limit is printed exactly with human_size."""
    return f"{significant(n / (1 << 20))} MiB" if n >= 1 << 20 else human_size(n)


def human_duration(ns: float | None) -> str:
    """A time given in ns, in the unit that keeps it readable: "1.23 ns", "45.2 us", "3.10 ms"."""
    if ns is None or (isinstance(ns, float) and math.isnan(ns)):
        return "n/a"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(ns) >= scale:
            return f"{significant(ns / scale)} {unit}"
    return f"{significant(ns)} ns"


def exact_duration(ns: float) -> str:
    """A time given in ns as a campaign would set it, without rounding: "200 us", "1.5 s", "10 ms"."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(ns) >= scale:
            return f"{ns / scale:g} {unit}"
    return f"{ns:g} ns"


def size_axis_label(n: float) -> str:
    """A byte count as a short axis tick: "512", "48K", "1.5M", "2G"."""
    for suffix, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale:
            return f"{n / scale:g}{suffix}"
    return f"{n:g}"


def eta_text(seconds: float) -> str:
    """How long a run should take, for the progress line: "45 s", "12 min"."""
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


def human_rate(value: float | None, unit: str = "B/s") -> str:
    """A rate with a decimal prefix: "12.3 GB/s", "850 MB/s", "1.20 M/s" (unit "/s")."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{significant(value / scale)} {prefix}{unit}"
    return f"{significant(value)} {unit}"


def counted(n: int | float, noun: str, plural: str | None = None) -> str:
    """A count and its noun in agreement: "1 period", "3 periods", "1,024 deadline misses"."""
    number = f"{n:,}" if isinstance(n, int) else f"{n:,.0f}"
    return f"{number} {noun if n == 1 else plural or noun + 's'}"


def verb(n: int | float, singular: str, plural: str) -> str:
    """The verb that agrees with a count: verb(1, "was", "were")."""
    return singular if n == 1 else plural
