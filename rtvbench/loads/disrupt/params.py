"""The `disrupt` load: a neighbour guest rebooted (or killed and booted again) every `every_s`
seconds during the measurement: does the victim keep its deadlines while another domain restarts?

Nothing runs inside a guest: rtvbench itself power-cycles the guest `where` names (the other guests
of a multi-guest environment for "neighbours", or another qemu environment), from a thread of the
runner. Each event is a `window` record of the load (kind "disrupt") with its times, counted from the
moment the load started, which is right before the measured probe starts (the load has no settling
time); rtvbench/run_analyses/disruption reads the victim's windows around each event.
"""

from __future__ import annotations

import threading
import time
from typing import Literal

from pydantic import field_validator

from rtvbench.errors import TargetError
from rtvbench.loads.base import LOADS, Load, LoadContext
from rtvbench.params import Name, Number, StrictModel
from rtvbench.probe.stream import SCHEMA
from rtvbench.targets.base import Background, Target
from rtvbench.targets.capabilities import PowerCycling


class DisruptParams(StrictModel):
    every_s: Number = 2.0
    action: Literal["reboot", "kill"] = "reboot"
    where: Name = "neighbours"

    @field_validator("every_s")
    @classmethod
    def _every(cls, v: float) -> float:
        if not 0.5 <= v <= 86_400:
            raise ValueError("must be from 0.5 to 86400 seconds (a boot takes seconds)")
        return v


class Disruption(Background):
    """The thread that cycles one guest every `every_s` seconds until stopped."""

    def __init__(self, name: str, target: Target, params: DisruptParams, ctx: LoadContext) -> None:
        self.argv = [f"(rtvbench) {params.action} {target.name} every {params.every_s:g} s"]
        self._name, self._target, self._params, self._sink = name, target, params, ctx.on_record
        self._stop = threading.Event()
        self._seq = 0
        self._events = 0
        self._error: str | None = None
        self._t0 = time.monotonic_ns()
        self._emit({"type": "meta", "schema": SCHEMA, "subcommand": "disrupt",
                    "params": {"kind": "disrupt", "action": params.action, "every_s": params.every_s,
                               "target": target.name}})
        self._thread = threading.Thread(target=self._run, name=f"disrupt {target.name}", daemon=True)
        self._thread.start()

    def _emit(self, record: dict) -> None:
        self._seq += 1
        if self._sink is not None:
            self._sink(self._name, self._seq, record)

    def _run(self) -> None:
        while not self._stop.wait(self._params.every_s):
            start = time.monotonic_ns()
            try:
                phases = self._target.power_cycle(hard=self._params.action == "kill")
            except TargetError as e:
                self._error = str(e)
                return
            end = time.monotonic_ns()
            try:
                # The guest kernel's own word that this was a new boot.
                boot_id = self._target.read_file("/proc/sys/kernel/random/boot_id").strip()
            except TargetError:
                boot_id = None
            self._emit({"type": "window", "kind": "disrupt", "index": self._events,
                        "t_start_ns": start - self._t0, "t_end_ns": end - self._t0,
                        "action": self._params.action, "boot_ns": phases.get("total_ns"), "boot_id": boot_id})
            self._events += 1

    def poll(self) -> int | None:
        return 1 if self._error is not None else None

    def stop(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        # A cycle under way ends first: the guest must be up again for what follows.
        self._thread.join()
        elapsed = time.monotonic_ns() - self._t0
        self._emit({"type": "result", "kind": "disrupt", "events": self._events, "elapsed_ns": elapsed})
        self._emit({"type": "end", "status": "error" if self._error else "ok",
                    **({"error": self._error} if self._error else {})})

    def output_tail(self) -> str:
        return self._error or ""


@LOADS.register("disrupt")
class DisruptLoad(Load):
    kind = "disrupt"
    Params = DisruptParams
    requires = (PowerCycling,)

    def commands(self) -> list[str]:
        p: DisruptParams = self.params
        return [f"(rtvbench) {p.action} the guest(s) of {p.where} every {p.every_s:g} s"]

    def launch(self, ctx: LoadContext) -> Background | None:
        return Disruption(self.name, ctx.site(self.where).target, self.params, ctx)
