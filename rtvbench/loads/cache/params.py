"""`kind = "cache"`: workers that touch pseudo-random cache lines of their own buffer, over and
over ("auto": twice the last-level cache), so that their neighbours' lines are evicted."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import PlainValidator
from pydantic_core import PydanticCustomError

from rtvbench.loads.probe_load import MAX_BUFFER, K, BpsLimit, ProbeLoadParams, register
from rtvbench.params import ProbeRange, parse_size, size_text


def _auto_or_size(v: Any) -> int | str:
    if v == "auto":
        return v
    try:
        n = parse_size(v)
    except ValueError:
        n = -1
    if not 8 * K <= n <= MAX_BUFFER:
        raise PydanticCustomError("size", 'must be a size from 8K to {hi}, such as "32M", or "auto"',
                                  {"hi": size_text(MAX_BUFFER)})
    return n


AutoOrBufferSize = Annotated[Any, PlainValidator(_auto_or_size), ProbeRange("buffer-size", 8 * K, MAX_BUFFER)]


class CacheLoadParams(ProbeLoadParams):
    buffer_size: AutoOrBufferSize | None = None
    bps_limit: BpsLimit | None = None
    OPTIONS: ClassVar[dict[str, str]] = {"buffer_size": "--buffer-size", "bps_limit": "--bps-limit"}


register("cache", CacheLoadParams)
