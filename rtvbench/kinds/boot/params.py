"""The `boot` benchmark: one power cycle of the measured environment per measurement, timed in phases.

Not a probe subcommand: the target switches the environment off and on (Target.power_cycle), and
the probe's `sysinfo` must then run there (the probe works again, not only the kernel). The boot's
phases come from the host's clock (QEMU started or the reboot command sent, `ready` received or the
probe answered) and the environment's own boot clock (for a guest: when its clock started, when /init
started, when the probe said `ready`; for a board: its uptime); docs/campaign.md.
"""

from __future__ import annotations

import json

from rtvbench.benchmarks.base import BENCHMARKS, Benchmark
from rtvbench.errors import TargetError
from rtvbench.params import StrictModel
from rtvbench.probe.stream import SCHEMA
from rtvbench.targets.base import Completed, Deadline
from rtvbench.targets.capabilities import PowerCycling

#: a TCG boot of Debian's kernel takes 5-15 s here; the ETA only needs the order of magnitude
_EXPECTED_S = 10.0


class BootParams(StrictModel):
    pass


@BENCHMARKS.register("boot")
class BootBenchmark(Benchmark):
    kind = "boot"
    requires = (PowerCycling,)
    Params = BootParams
    # The bare-metal image is booted afresh as a guest is, and answers the sysinfo after it itself.
    freestanding_options = ()

    def probe_args(self) -> list[str]:
        return ["sysinfo"]          # after the boot: the probe itself works again

    def expected_seconds(self) -> float:
        return _EXPECTED_S

    def campaign_problems(self, environments: dict, loads: dict) -> list[tuple[tuple, str]]:
        """No load may run inside the guest being cycled (it would die with it); that every environment
        can be power-cycled at all is its `requires`."""
        out = []
        for load_name, load in loads.items():
            parts = getattr(load, "parts", None) or [load]
            if any(p is not None and p.kind != "idle" and p.where == "same" for p in parts):
                out.append((("loads", load_name, "where"),
                            f'benchmark "{self.name}" (kind boot) power-cycles the measured guest, which would '
                            'end this load; run it elsewhere (where = "neighbours" or another environment) or '
                            "in a campaign without boot"))
        return out

    def execute(self, target, argv: list[str], on_line, deadline: Deadline | None = None) -> Completed:
        on_line(json.dumps({"type": "meta", "schema": SCHEMA, "subcommand": "boot", "params": {},
                            "argv": argv}))
        try:
            phases = target.power_cycle()
        except TargetError as e:
            on_line(json.dumps({"type": "end", "status": "error", "error": str(e)}))
            return Completed(3, str(e))
        sysinfo = []
        # The power cycle is bounded by its own timeouts; the watchdog's time starts with the probe.
        done = target.run(argv, sysinfo.append, None if deadline is None else Deadline(deadline.seconds))
        if done.interrupted or done.returncode != 0:
            status = "interrupted" if done.interrupted else "error"
            on_line(json.dumps({"type": "end", "status": status,
                                "error": f"the probe's sysinfo after the boot exited with {done.returncode}"}))
            return done
        try:
            boot_id = target.read_file("/proc/sys/kernel/random/boot_id").strip()
        except TargetError:
            boot_id = None          # a kernel without it: the boot happened all the same
        on_line(json.dumps({"type": "result", **phases, "boot_id": boot_id}))
        on_line(json.dumps({"type": "end", "status": "ok"}))
        return Completed(0, "")
