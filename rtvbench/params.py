"""Building blocks for the pydantic models that validate campaign tables.

Models are strict (TOML already has real types, so "200" for a number is a mistake
worth reporting) and forbid unknown keys (a typo must not be silently ignored).
The custom types raise errors whose message reads well after "file:line: key: ".
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Annotated, Any, Callable, Iterable

from pydantic import AfterValidator, BaseModel, ConfigDict, PlainValidator, model_validator
from pydantic_core import PydanticCustomError


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)


#: the probe's default real-time priority of its measuring threads (latency, noise), which
#: tests/test_spec.py and tests/test_probe_noise.py check the probe agrees with
DEFAULT_RT_PRIORITY = 80
RT_POLICIES = ("fifo", "rr")


class RealtimeThreads(StrictModel):
    """The `policy` / `priority` rules of a benchmark that measures with one thread per CPU at a real-time
    policy: a real-time policy without a priority gets the probe's default, "other" takes none. A
    subclass declares the two fields (where they stand in its table)."""

    @model_validator(mode="before")
    @classmethod
    def _default_priority(cls, data):
        if isinstance(data, dict) and "priority" not in data and \
                data.get("policy", cls.model_fields["policy"].default) in RT_POLICIES:
            return {**data, "priority": DEFAULT_RT_PRIORITY}
        return data

    @model_validator(mode="after")
    def _rt_consistent(self):
        if self.policy == "other" and self.priority:
            raise ValueError('policy "other" takes no real-time priority: drop priority or use policy "fifo"')
        if self.policy != "other" and self.priority == 0:
            raise ValueError(f'policy "{self.policy}" needs priority from 1 to 99')
        return self


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    """A finite number: TOML has nan and inf, and neither is a bound, a duration or a size anyone means."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and (isinstance(v, int) or math.isfinite(v))


def _number(v: Any) -> float | int:
    if not _is_number(v):
        raise PydanticCustomError("number", "must be a finite number")
    return v


def int_range(lo: int, hi: int):
    """A validator type for an integer from lo to hi: limits that keep the work a campaign asks for
    finite and what the store and the probe can hold (a count, a seed, a number of guests)."""
    def check(v: Any) -> int:
        if not _is_int(v) or not lo <= v <= hi:
            raise PydanticCustomError("int_range", "must be an integer from {lo} to {hi}", {"lo": lo, "hi": hi})
        return v
    return Annotated[int, PlainValidator(check)]


# ---------------------------------------------------------------------------
# Keys that become probe options take the probe's own range: each type carries a ProbeRange
# naming the option, and tests/test_probe_ranges.py holds every ProbeRange equal to what
# `rtvb-probe --describe-options SUB` prints, so a value `validate` accepts is one the probe
# accepts (on any machine: CPU masks and directories are the target's to check).


@dataclass(frozen=True)
class ProbeRange:
    """The probe option a campaign key becomes and the values the probe accepts for it."""
    option: str
    lo: float
    hi: float
    zero_ok: bool = False           # numbers: 0 is accepted besides [lo, hi]
    cap: int | None = None          # lists: at most this many values


def _in_range(v: float, r: ProbeRange) -> bool:
    return r.lo <= v <= r.hi or (r.zero_ok and v == 0)


def _limit_text(x: float) -> str:
    """A limit as the probe's messages write it: 1e7 rather than 1e+07, 0.5 and 100 as they are."""
    if isinstance(x, int):
        return str(x)
    mantissa, e, exponent = f"{x:g}".partition("e")
    return mantissa + (e + str(int(exponent)) if e else "")


def _range_text(r: ProbeRange, what: str) -> str:
    return f"{'0 or ' if r.zero_ok else ''}{what} from {_limit_text(r.lo)} to {_limit_text(r.hi)}"


def number_range(lo: float, hi: float, what: str = "a number", above: bool = False):
    """A validator type for a finite number from lo (above lo when `above`) to hi, `what` naming it in
    the message ("a number of seconds"): the limits of a key rtvbench itself acts on (a timeout, an off
    time, a requirement's bound), so that no value stalls a run for ever or overflows what holds it."""
    low = f"above {_limit_text(lo)} and at most" if above else f"from {_limit_text(lo)} to"

    def check(v: Any) -> float:
        if not _is_number(v) or not (lo < v if above else lo <= v) or v > hi:
            raise PydanticCustomError("range", "must be {what} {low} {hi}", {"what": what, "low": low,
                                                                            "hi": _limit_text(hi)})
        return v
    return Annotated[float, PlainValidator(check)]


#: how long rtvbench waits for a target (a boot, a heartbeat, a board's off time): an hour is more than a
#: TCG boot on a loaded host or a slow board takes, and a longer wait looks like a hang
MAX_WAIT_S = 3600
WaitS = number_range(0, MAX_WAIT_S, "a number of seconds", above=True)


def probe_int(option: str, lo: int, hi: int):
    """An integer the probe takes as --OPTION, from lo to hi."""
    r = ProbeRange(option, lo, hi)

    def check(v: Any) -> int:
        if not _is_int(v) or not _in_range(v, r):
            raise PydanticCustomError("int_range", "must be {what}", {"what": _range_text(r, "an integer")})
        return v
    return Annotated[int, PlainValidator(check), r]


def probe_number(option: str, lo: float, hi: float, what: str, zero_ok: bool = False):
    """A finite number the probe takes as --OPTION, from lo to hi (or 0 when zero_ok); `what` names
    it in the message ("a number of seconds")."""
    r = ProbeRange(option, float(lo), float(hi), zero_ok)

    def check(v: Any) -> float:
        if not _is_number(v) or not _in_range(v, r):
            raise PydanticCustomError("range", "must be {what}", {"what": _range_text(r, what)})
        return v
    return Annotated[float, PlainValidator(check), r]


def probe_list(item, option: str, cap: int):
    """A list of at most `cap` values of the probe_int/probe_number type `item`, for a
    repeatable option or a comma-separated one."""
    (base,) = [m for m in item.__metadata__ if isinstance(m, ProbeRange)]

    def at_most(v: list) -> list:
        if len(v) > cap:
            raise PydanticCustomError("list", "must be a list of at most {cap} values", {"cap": cap})
        return v
    return Annotated[list[item], AfterValidator(at_most), ProbeRange(option, base.lo, base.hi, base.zero_ok, cap)]


_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


def _name(v: Any) -> str:
    if not isinstance(v, str) or not _NAME.match(v):
        raise PydanticCustomError("name", "must be a name of letters, digits, '_' and '-'")
    return v


Number = Annotated[float, PlainValidator(_number)]
Name = Annotated[str, PlainValidator(_name)]


def _target_dir(v: Any) -> str:
    # Each target starts the probe in a directory of its own (a guest's /, an ssh workdir, this
    # machine's working directory), so a relative path would name a different place in each.
    if not isinstance(v, str) or not v:
        raise PydanticCustomError("target_dir", "must name a directory")
    if not v.startswith("/"):
        raise PydanticCustomError(
            "target_dir", "must be an absolute path in the environment it is used in: a relative one would "
            'depend on the directory each target starts the probe in; write it from / (e.g. "/tmp/{got}")',
            {"got": v})
    return v


#: a directory of the environment a load or benchmark runs in: absolute, the same on every target
TargetDir = Annotated[str, PlainValidator(_target_dir)]


def is_valid_name(name: str) -> bool:
    """Names of environments, loads and benchmarks appear in metric names
    (`<benchmark>.<figure>`) and file names, so they must be plain words."""
    return bool(_NAME.match(name))


def number_arg(v: float | int) -> str:
    """A number as a command-line argument: 5 and 5.0 both give "5"."""
    return str(int(v)) if float(v).is_integer() else repr(float(v))


# ---------------------------------------------------------------------------
# Sizes, size sweeps and name lists, shared by the benchmark kinds and the load generators.
# Sizes are written the way the probe's documentation writes them (`4096`, `"4K"`, `"64M"`,
# `"1.5M"`, also `"64MiB"`; K = 1024) and always reach the probe as plain byte counts, because
# the probe's subcommands do not all accept the same suffixes.

_SIZE = re.compile(r"^(\d+(?:\.\d+)?)([kKmMgG](?:iB)?|B)?$")
_SCALE = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "b": 1}
_SIZE_HELP = 'a size in bytes: an integer or a string such as "4K", "64M", "1.5M" or "64MiB"'


def parse_size(v: Any) -> int:
    """Bytes from 4096, "4K", "64MiB", "1.5M"; raises ValueError with a message for the user."""
    if isinstance(v, int) and not isinstance(v, bool):
        if v < 0:
            raise ValueError(f"must be {_SIZE_HELP}")
        return v
    if not isinstance(v, str):
        raise ValueError(f"must be {_SIZE_HELP}")
    m = _SIZE.match(v.strip())
    if not m:
        raise ValueError(f"must be {_SIZE_HELP}")
    value = float(m.group(1)) * _SCALE[(m.group(2) or "b")[0].lower()]
    if not value.is_integer():
        raise ValueError(f"must be a whole number of bytes ({v!r} is not)")
    return int(value)


@dataclass(frozen=True)
class SizeRange:
    """The probe's sweep `A-B`: every power of two and 1.5 x power of two from A to B, and A and B."""
    lo: int
    hi: int

    def points(self) -> list[int]:
        out = {self.lo, self.hi}
        p = 1
        while p <= self.hi:
            out.update(x for x in (p, p * 3 // 2) if self.lo <= x <= self.hi)
            p *= 2
        return sorted(out)

    def __str__(self) -> str:
        return f"{self.lo}-{self.hi}"


def _size_item(v: Any) -> int | SizeRange:
    if isinstance(v, str) and "-" in v.strip().lstrip("-"):
        a, b = v.split("-", 1)
        lo, hi = parse_size(a), parse_size(b)
        if lo > hi:
            raise ValueError(f'range "{v}" must go from the smaller size to the larger')
        return SizeRange(lo, hi)
    return parse_size(v)


def _sizes(v: Any) -> tuple:
    """A list of sizes and ranges, or one string of them separated by commas."""
    items = v.split(",") if isinstance(v, str) else v
    if not isinstance(items, list) or not items:
        raise PydanticCustomError("sizes", 'must be a non-empty list of sizes, e.g. ["16K", "64M"], or a sweep '
                                           'such as "512-256M"')
    out = []
    for item in items:
        try:
            out.append(_size_item(item.strip() if isinstance(item, str) else item))
        except ValueError as e:
            raise PydanticCustomError("sizes", "{item}: {why}", {"item": repr(item), "why": str(e)}) from None
    return tuple(out)


def _plain_sizes(v: Any) -> tuple:
    """A list of sizes without sweeps (the `os` and `ipc` options take no ranges)."""
    sizes = _sizes(v)
    for s in sizes:
        if isinstance(s, SizeRange):
            raise PydanticCustomError("sizes", "{item}: a sweep is not allowed here; list the sizes",
                                      {"item": repr(str(s))})
    return sizes


def _size(v: Any) -> int:
    try:
        return parse_size(v)
    except ValueError as e:
        raise PydanticCustomError("size", str(e)) from None


#: one size in bytes
Size = Annotated[int, PlainValidator(_size)]
#: sizes and sweeps: a tuple of int (bytes) and SizeRange
Sizes = Annotated[tuple, PlainValidator(_sizes)]
#: sizes only: a tuple of int (bytes)
SizeList = Annotated[tuple, PlainValidator(_plain_sizes)]


def size_text(n: int) -> str:
    """A byte count as it is typed: the largest binary suffix that divides it ("64K", "1G", "1000")."""
    for suffix, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{suffix}"
    return str(n)


def probe_size(option: str, lo: int, hi: int):
    """A size in bytes the probe takes as --OPTION, from lo to hi."""
    r = ProbeRange(option, lo, hi)

    def check(v: Any) -> int:
        n = _size(v)
        if not lo <= n <= hi:
            raise PydanticCustomError("size", "must be a size from {lo} to {hi}",
                                      {"lo": size_text(lo), "hi": size_text(hi)})
        return n
    return Annotated[int, PlainValidator(check), r]


def probe_sizes(option: str, lo: int, hi: int, cap: int, sweeps: bool = True):
    """Sizes (and, when `sweeps`, ranges "A-B") the probe takes as --OPTION: every size from lo
    to hi and at most `cap` sizes, counted as the probe counts them (each item's sizes, repeats
    across items included)."""
    r = ProbeRange(option, lo, hi, cap=cap)

    def check(v: Any) -> tuple:
        sizes = _sizes(v) if sweeps else _plain_sizes(v)
        points = [p for s in sizes for p in (s.points() if isinstance(s, SizeRange) else [s])]
        bad = [p for p in points if not lo <= p <= hi]
        if bad:
            raise PydanticCustomError("sizes", "every size must be from {lo} to {hi} ({bad} is not)",
                                      {"lo": size_text(lo), "hi": size_text(hi), "bad": size_text(bad[0])})
        if len(points) > cap:
            raise PydanticCustomError("sizes", "must stand for at most {cap} sizes, not {n}",
                                      {"cap": cap, "n": len(points)})
        return sizes
    return Annotated[tuple, PlainValidator(check), r]


def size_points(sizes: Iterable[int | SizeRange]) -> list[int]:
    """Every size a list of sizes and sweeps stands for, sorted, without repeats."""
    out: set[int] = set()
    for s in sizes:
        out.update(s.points() if isinstance(s, SizeRange) else [s])
    return sorted(out)


def sizes_arg(sizes: Iterable[int | SizeRange]) -> str:
    """The probe's list syntax, in bytes: "512-268435456,1048576"."""
    return ",".join(str(s) for s in sizes)


#: how many sizes the bare-metal image's memory kinds take in one list
FREESTANDING_MAX_SIZES = 32


def freestanding_sizes_problem(sizes: Iterable[int | SizeRange], footprint: Callable[[int], int],
                               area_bytes: int, needs: str) -> str | None:
    """Why the freestanding probe cannot take `sizes`: a range (it takes a list only), more sizes than it
    holds, or a size whose `footprint` (`needs` says what that is) outgrows the `area_bytes` it measures in."""
    ranges = [s for s in sizes if isinstance(s, SizeRange)]
    if ranges:
        return (f"its sizes are a list, not the range {size_text(ranges[0].lo)}-{size_text(ranges[0].hi)}; "
                "list the sizes")
    if len(sizes) > FREESTANDING_MAX_SIZES:
        return f"it takes at most {FREESTANDING_MAX_SIZES} sizes, not {len(sizes)}; list fewer"
    big = [s for s in sizes if footprint(s) > area_bytes]
    if big:
        return (f"size {size_text(big[0])} does not fit its {size_text(area_bytes)} memory area ({needs}); "
                "use smaller sizes")
    return None


def names_or_all(allowed: Iterable[str], what: str):
    """A validator type for `"all"` or a non-empty list of names out of `allowed` (kept in the order given)."""
    allowed = tuple(allowed)

    def check(v: Any) -> tuple[str, ...]:
        if v == "all":
            return allowed
        if not isinstance(v, list) or not v or not all(isinstance(x, str) for x in v):
            raise PydanticCustomError("names", 'must be "all" or a non-empty list of {what} names',
                                      {"what": what})
        bad = [x for x in v if x not in allowed]
        if bad:
            raise PydanticCustomError("names", "unknown {what} {bad} (known: {known})",
                                      {"what": what, "bad": ", ".join(f'"{b}"' for b in bad),
                                       "known": ", ".join(allowed)})
        if len(set(v)) != len(v):
            raise PydanticCustomError("names", "names a {what} twice", {"what": what})
        return tuple(v)

    return Annotated[tuple, PlainValidator(check)]
