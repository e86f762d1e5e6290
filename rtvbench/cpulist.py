"""CPU lists: the kernel's list syntax ("0-3,6") read, written and validated in one place.

Campaign keys, fingerprints (`cpus_online`, `cpus_isolated` ...) and report sentences all
speak this syntax; the probe pins with a cpu_set_t, so no CPU number reaches CPU_SETSIZE
(1024 in every libc the probe builds with). Ranges are bounded by it before they are
expanded, so "0-99999999999" is an error, not gigabytes of integers.
"""

from __future__ import annotations

from typing import Annotated, Any, Iterable

from pydantic import PlainValidator
from pydantic_core import PydanticCustomError

from rtvbench.params import ProbeRange

#: CPUs 0 .. MAX_CPUS - 1 exist for the probe (glibc's and musl's CPU_SETSIZE)
MAX_CPUS = 1024


def _cpu_number(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < MAX_CPUS


def parse_cpu_list(value: Any) -> list[int] | None:
    """CPUs from the list syntax ("0-3,6"), a list of ints or one int, sorted without repeats;
    [] for ""; None when the value is not a CPU list (or names a CPU >= MAX_CPUS)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return [value] if _cpu_number(value) else None
    if isinstance(value, (list, tuple)):
        return sorted(set(value)) if all(_cpu_number(c) for c in value) else None
    if not isinstance(value, str):
        return None
    text = value.replace(" ", "")
    if text == "":
        return []
    out: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()) or len(lo) > 4 or len(hi) > 4:
            return None
        a, b = int(lo), int(hi) if hi else int(lo)
        if b < a or b >= MAX_CPUS:
            return None
        out.update(range(a, b + 1))
    return sorted(out)


def pinned_cpus(value: Any) -> tuple[int, ...] | None:
    """The CPUs a benchmark's `cpus` key pins it to, for its Placement; None when it names none."""
    return tuple(parse_cpu_list(value) or ()) if value is not None else None


def cpu_list_text(cpus: Iterable[int]) -> str:
    """The list syntax for a set of CPUs: [0, 1, 2, 5] -> "0-2,5"."""
    cs = sorted(set(cpus))
    parts, i = [], 0
    while i < len(cs):
        j = i
        while j + 1 < len(cs) and cs[j + 1] == cs[j] + 1:
            j += 1
        parts.append(str(cs[i]) if i == j else f"{cs[i]}-{cs[j]}")
        i = j + 1
    return ",".join(parts)


def cpus_words(cpus: Iterable[int]) -> str:
    """"CPU 3" or "CPUs 0-2,5", for sentences."""
    cs = sorted(set(cpus))
    return f"CPU {cs[0]}" if len(cs) == 1 else f"CPUs {cpu_list_text(cs)}"


def _cpu_list(v: Any) -> str:
    """A campaign's `cpus`: [0, 1] or "0-3,6", normalised to the list syntax."""
    cpus = parse_cpu_list(v) if isinstance(v, (list, str)) else None
    if not cpus:
        raise PydanticCustomError("cpus", 'must be a list of CPU numbers or a CPU list such as "0-3,6", '
                                          "CPUs from 0 to {top}, ranges from low to high", {"top": MAX_CPUS - 1})
    return v.replace(" ", "") if isinstance(v, str) else ",".join(str(c) for c in v)


def _cpu_pair(v: Any) -> tuple[int, ...]:
    if isinstance(v, list) and 1 <= len(v) <= 2 and all(_cpu_number(c) for c in v):
        return tuple(v)
    raise PydanticCustomError("cpus", "must be a list of one or two CPU numbers below {n}: [this end, peer]",
                              {"n": MAX_CPUS})


#: a validated CPU list, kept in the list syntax the probe takes
CpuList = Annotated[str, PlainValidator(_cpu_list)]
#: the CPUs of the two ends of a round trip: [this end, peer]
CpuPair = Annotated[tuple, PlainValidator(_cpu_pair)]


def _entries(text: str) -> int:
    """CPUs a valid list names as the probe counts them: every item, repeats included."""
    n = 0
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        n += int(hi or lo) - int(lo) + 1
    return n


def probe_cpus(option: str, cap: int):
    """A CpuList the probe takes as --OPTION into an array of `cap` CPUs."""
    r = ProbeRange(option, 0, MAX_CPUS - 1, cap=cap)

    def check(v: Any) -> str:
        text = _cpu_list(v)
        if _entries(text) > cap:
            raise PydanticCustomError("cpus", "must name at most {cap} CPUs", {"cap": cap})
        return text
    return Annotated[str, PlainValidator(check), r]


def probe_cpu_pair(option: str):
    """A CpuPair the probe takes as --OPTION A,B."""
    return Annotated[tuple, PlainValidator(_cpu_pair), ProbeRange(option, 0, MAX_CPUS - 1, cap=2)]
