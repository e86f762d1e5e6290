"""`kind = "mem"`: workers that stream over a buffer of their own (read, write or copy), at most
at a bandwidth limit when one is given."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import model_validator

from rtvbench.loads.probe_load import MAX_BUFFER, K, BpsLimit, ProbeLoadParams, register
from rtvbench.params import probe_size

BufferSize = probe_size("buffer-size", 8 * K, MAX_BUFFER)


class MemLoadParams(ProbeLoadParams):
    buffer_size: BufferSize | None = None
    op: Literal["read", "write", "copy"] | None = None
    bps_limit: BpsLimit | None = None
    OPTIONS: ClassVar[dict[str, str]] = {"buffer_size": "--buffer-size", "op": "--op",
                                         "bps_limit": "--bps-limit"}

    @model_validator(mode="after")
    def _copy_halves(self):
        if (self.op or "copy") == "copy" and self.buffer_size is not None and self.buffer_size < 16 * K:
            raise ValueError('op "copy" needs buffer_size of at least 16K (it copies one half onto the other)')
        return self


register("mem", MemLoadParams)
