"""`kind = "sched"`: scheduler and wake-up load, pairs of threads passing a message back and forth
over pipes (the messaging pattern of hackbench-style runs): every message is a wake-up, and with a
pair on one CPU a context switch."""

from __future__ import annotations

from typing import ClassVar

from rtvbench.loads.probe_load import ProbeLoadParams, register
from rtvbench.params import probe_size

MsgSize = probe_size("msg-size", 1, 4096)       # at most PIPE_BUF: one atomic write per message


class SchedLoadParams(ProbeLoadParams):
    msg_size: MsgSize | None = None
    OPTIONS: ClassVar[dict[str, str]] = {"msg_size": "--msg-size"}


register("sched", SchedLoadParams)
