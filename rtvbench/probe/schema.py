"""The rules every probe record must follow before rtvbench stores it (docs/probe-output.md,
"What the host checks").

A record comes from a program on a board or in a guest: a probe of another version, a broken
build, a compromised machine. What the analysis later reads as a number must be a number, what it
counts must be a count, and no record may be big or deep enough to exhaust the runner or poison
every later report of the run. The checks are structural and hold for every subcommand: types of
the fields whose names say what they are, ranges, sizes and nesting; the meaning of the figures is
the kinds' decoders' business.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from rtvbench.cpulist import MAX_CPUS

#: the longest line the probe prints is a result with a full histogram (7424 buckets, ~250 KB)
MAX_LINE_BYTES = 4 << 20
#: the deepest record is a few levels (result -> response -> histogram -> buckets -> bucket)
MAX_DEPTH = 12
#: values in one record: a full histogram has 3 x 7424
MAX_VALUES = 200_000
#: histogram bounds span uint64; every other integer fits int64
INT_MIN, UINT_MAX = -(2**63), 2**64
MAX_BUCKETS = 10_000

# Fields named for a quantity: a number (or null), or a list of numbers (`values_ns`, `times_ns`).
_QUANTITY = re.compile(r".*_(ns|us|bps|bytes|per_s|percent|ops|flops)$")
# Fields that count something: an integer >= 0 (or null).
_COUNTS = frozenset({"count", "missed", "deadline_misses", "events", "index", "schema", "pid"})
_STRINGS = frozenset({"type", "code", "message", "subcommand", "status", "probe_version", "arch", "error",
                      "start_time"})
_OBJECTS = frozenset({"params", "privileges", "over", "histogram", "response"})


class RecordError(ValueError):
    """Why a line is not an acceptable probe record, in words that follow "line N: "."""


def _reject_constant(name: str) -> Any:
    raise RecordError(f"{name} is not a number JSON allows")


def parse_record(line: str) -> dict[str, Any]:
    """The record on one line of probe output, checked; raises RecordError."""
    if len(line) > MAX_LINE_BYTES:
        raise RecordError(f"a line of {len(line):,} characters, more than any record has ({MAX_LINE_BYTES:,})")
    if _depth_of(line) > MAX_DEPTH:
        raise RecordError(f"nested more than {MAX_DEPTH} levels deep")
    try:
        record = json.loads(line, parse_constant=_reject_constant)
    except RecordError:
        raise
    except (ValueError, RecursionError):
        raise RecordError("not a JSON object") from None
    if not isinstance(record, dict):
        raise RecordError("not a JSON object")
    _check(record, "", [0])
    return record


def _depth_of(line: str) -> int:
    """The deepest nesting of brackets outside strings, counted without parsing (json's own parser
    would recurse that deep first)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in line:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _check(value: Any, key: str, seen: list[int]) -> None:
    seen[0] += 1
    if seen[0] > MAX_VALUES:
        raise RecordError(f"more than {MAX_VALUES:,} values in one record")
    if isinstance(value, bool) or value is None or isinstance(value, str):
        pass
    elif isinstance(value, int):
        if not INT_MIN <= value <= UINT_MAX:
            raise RecordError(f"`{key}` is an integer of {len(str(abs(value)))} digits")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise RecordError(f"`{key}` is not a finite number")
    elif isinstance(value, list):
        for item in value:
            _check(item, key, seen)
    elif isinstance(value, dict):
        for k, v in value.items():
            _field(k, v)
            _check(v, k, seen)
        lo, hi = value.get("min_ns"), value.get("max_ns")
        if _number(lo) and _number(hi) and lo > hi:
            raise RecordError(f"`min_ns` {lo} is above `max_ns` {hi}")


def _field(key: str, v: Any) -> None:
    """The type a field's name promises."""
    if key in _COUNTS:
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
            raise RecordError(f"`{key}` must be a count (an integer >= 0), not {_show(v)}")
    elif key in _STRINGS:
        if v is not None and not isinstance(v, str):
            raise RecordError(f"`{key}` must be a string, not {_show(v)}")
    elif key in _OBJECTS:
        if not isinstance(v, dict):
            raise RecordError(f"`{key}` must be an object, not {_show(v)}")
        if key == "histogram":
            _histogram(v)
        elif key == "over":
            for threshold, n in v.items():
                if not threshold.isdigit() or not isinstance(n, int) or isinstance(n, bool) or n < 0:
                    raise RecordError(f"`over` maps thresholds in ns to counts, not {_show(threshold)}: {_show(n)}")
    elif key == "cpu":
        if v is not None and v != "all" and (not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < MAX_CPUS):
            raise RecordError(f"`cpu` must be a CPU number below {MAX_CPUS} or \"all\", not {_show(v)}")
    elif key == "argv":
        if not isinstance(v, list) or not all(isinstance(a, str) for a in v):
            raise RecordError(f"`argv` must be a list of strings, not {_show(v)}")
    elif _QUANTITY.match(key):
        values = v if isinstance(v, list) else [v]
        if not all(x is None or _number(x) for x in values):
            raise RecordError(f"`{key}` must be a number, not {_show(v)}")


def _histogram(h: dict[str, Any]) -> None:
    buckets = h.get("buckets", [])
    if not isinstance(buckets, list) or len(buckets) > MAX_BUCKETS:
        raise RecordError(f"`histogram.buckets` must be a list of at most {MAX_BUCKETS:,} buckets")
    for b in buckets:
        if (not isinstance(b, list) or len(b) != 3
                or not all(isinstance(x, int) and not isinstance(x, bool) for x in b)
                or not 0 <= b[0] < b[1] or b[2] < 0):
            raise RecordError(f"histogram bucket {_show(b)} is not [lo_ns, hi_ns, count] with 0 <= lo < hi, "
                              "count >= 0")


def _show(v: Any) -> str:
    text = json.dumps(v, default=str)
    return text if len(text) <= 40 else text[:37] + "..."
