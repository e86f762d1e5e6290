"""Searches along one variable: the maximum of a function on an interval, and a root in a bracket.

The tail fit's only numerical needs, in plain Python: scipy.optimize would cost every report with a
tail fit 0.12 s of import for two one-dimensional searches.
"""

from __future__ import annotations

import math
from typing import Callable

#: the golden section's shrink factor per step
_GOLDEN = (math.sqrt(5) - 1) / 2


def maximize_on(f: Callable[[float], float], a: float, b: float, xtol: float) -> tuple[float, float]:
    """The x in [a, b] where f is largest and f(x), by golden-section search (f unimodal there).

    f may be -inf on a part of the interval next to one of its ends (outside a distribution's
    support): on a tie the search moves right, so a region of -inf at the left end is left behind,
    and a caller with one at the right end passes the function mirrored."""
    c, d = b - _GOLDEN * (b - a), a + _GOLDEN * (b - a)
    fc, fd = f(c), f(d)
    while b - a > xtol:
        if fc > fd:
            b, d, fd = d, c, fc
            c = b - _GOLDEN * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + _GOLDEN * (b - a)
            fd = f(d)
    return (c, fc) if fc > fd else (d, fd)


def root_between(f: Callable[[float], float], a: float, b: float, xtol: float) -> float:
    """An x in [a, b] where f crosses zero, f(a) and f(b) of opposite signs: regula falsi with the
    Illinois step (the end kept twice in a row has its value halved), which converges about as fast as
    the secant method on a smooth f and never leaves the bracket."""
    fa, fb = f(a), f(b)
    if fa == 0:
        return a
    if fb == 0:
        return b
    if (fa > 0) == (fb > 0):
        raise ValueError(f"f has the same sign at both ends of [{a}, {b}]")
    side = 0
    for _ in range(200):
        x = b - fb * (b - a) / (fb - fa)
        if not a < x < b:                   # rounding at a tiny bracket: its middle instead
            x = (a + b) / 2
        fx = f(x)
        if fx == 0:
            return x
        if (fx > 0) == (fb > 0):
            b, fb = x, fx
            if side == -1:
                fa /= 2
            side = -1
        else:
            a, fa = x, fx
            if side == 1:
                fb /= 2
            side = 1
        if abs(b - a) <= xtol:
            break
    return (a + b) / 2 if abs(b - a) <= xtol else x
