"""`kind = "net"`: one loopback TCP connection per worker, a sender thread sending blocks to a
receiver thread."""

from __future__ import annotations

from typing import ClassVar

from rtvbench.loads.probe_load import BlockSize, BpsLimit, ProbeLoadParams, register


class NetLoadParams(ProbeLoadParams):
    bps_limit: BpsLimit | None = None
    block_size: BlockSize | None = None
    OPTIONS: ClassVar[dict[str, str]] = {"bps_limit": "--bps-limit", "block_size": "--block-size"}


register("net", NetLoadParams)
