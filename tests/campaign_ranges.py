"""The campaign keys that carry a probe option's range (ProbeRange), and values at and beyond the
ends of each range: shared by tests/test_probe_ranges.py and the campaign fuzzer."""

from __future__ import annotations

import math
import typing

from rtvbench.params import ProbeRange, StrictModel


def _range_in(tp) -> ProbeRange | None:
    """The outermost ProbeRange of a (possibly Optional) annotation."""
    if typing.get_origin(tp) is typing.Annotated:
        found = [m for m in tp.__metadata__ if isinstance(m, ProbeRange)]
        if found:
            return found[0]
    for arg in typing.get_args(tp):
        r = _range_in(arg)
        if r is not None:
            return r
    return None


def _strip_optional(tp):
    args = typing.get_args(tp)
    if typing.get_origin(tp) is not typing.Annotated and type(None) in args:
        (tp,) = [a for a in args if a is not type(None)]
    return tp


def ranged_fields(model: type[StrictModel]) -> dict[str, tuple[object, ProbeRange]]:
    """field -> (its type without Optional, ProbeRange) for the keys of `model` that carry one."""
    out = {}
    for name, info in model.model_fields.items():
        # pydantic keeps a field's Annotated metadata apart from its type: put them together again.
        tp = typing.Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
        tp = _strip_optional(tp)
        r = _range_in(tp)
        if r is not None:
            out[name] = (tp, r)
    return out


def edge_values(tp, r: ProbeRange) -> tuple[list, list]:
    """Campaign values at the ends of `r` (to accept) and just outside (to refuse), in the form the
    key takes (a number, a list, a CPU list string)."""
    base = typing.get_args(tp)[0] if typing.get_origin(tp) is typing.Annotated else tp
    lo, hi = r.lo, r.hi
    if r.option == "ctx":
        return [["2p/0k", "64p/65536k"], [f"{2 + k}p/{k}k" for k in range(r.cap)]], \
               [["1p/0k"], ["65p/0k"], ["2p/65537k"], ["2p/0k"] * (r.cap + 1)]
    if r.option == "ctx-cpu":
        return [lo, hi, "none"], [lo - 1, hi + 1]
    if r.option == "buffer-size" and base is not int:
        return [lo, hi, "auto"], [lo - 1, hi + 1]
    if base is str:                             # a CPU list
        fill = (f"0-{r.cap - 2},{int(hi)}" if r.cap > 1 else "0") if r.cap <= hi else f"0-{int(hi)}"
        return [fill, str(int(hi))], [f"0-{r.cap}", f"{int(hi) + 1}"]
    if r.cap == 2 and base is tuple:            # a CPU pair
        return [[lo, hi], [hi]], [[lo - 1], [hi + 1], [lo, lo, lo]]
    if r.cap is not None:                       # a list of numbers or sizes
        step = 64 if isinstance(lo, int) else (hi - lo) / (4 * r.cap)
        full = [lo, hi] + [lo + step * k for k in range(1, r.cap - 1)]
        outside = [[hi + (1 if isinstance(hi, int) else hi * 1e-9)], full + [lo]]
        if lo > 0:
            outside.append([lo - 1 if isinstance(lo, int) else lo / 2])
        return [[lo], [hi], full], outside
    if isinstance(lo, int):
        return [lo, hi], [lo - 1, hi + 1]
    below = [math.nextafter(lo, -math.inf)] if not (r.zero_ok and lo == 0) else [-1e-9]
    return ([lo, hi] + ([0] if r.zero_ok else [])), below + [math.nextafter(hi, math.inf)]
