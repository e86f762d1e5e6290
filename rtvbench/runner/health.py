"""One health check of an environment during a soak: does its probe still answer, how much memory do
the environment and (for a guest) its QEMU process take.

Each check is a small dict stored as it is (store: health_checks), read back as a
rtvbench.records.HealthCheck; rtvbench/run_analyses/soak reads the series. A check never raises:
what fails is recorded as failed, with the reason, and the soak goes on (the next measurement finds
out whether the target is really lost, and the runner brings it back).
"""

from __future__ import annotations

import time
from typing import Any

from rtvbench.errors import TargetError
from rtvbench.procstat import parse_meminfo
from rtvbench.targets import capabilities
from rtvbench.targets.base import QUICK_COMMAND_DEADLINE_S, Deadline


def health_check(target, probe: str | None) -> dict[str, Any]:
    started = time.monotonic()
    check: dict[str, Any] = {"probe_ok": False}
    try:
        done = target.run([probe or "rtvb-probe", "--version"], lambda line: None,
                          Deadline(QUICK_COMMAND_DEADLINE_S))
        check["probe_ok"] = done.returncode == 0 and not done.interrupted and not done.overdue
        if done.overdue:
            check["error"] = (f"`rtvb-probe --version` did not answer within {QUICK_COMMAND_DEADLINE_S:g} s "
                              "and was stopped")
        elif not check["probe_ok"]:
            check["error"] = f"the probe exited with {done.returncode}: {done.stderr.strip()[-200:]}"
    except (TargetError, OSError) as e:
        check["error"] = str(e)
    check["answer_s"] = round(time.monotonic() - started, 4)
    if check["probe_ok"]:
        try:
            mem = parse_meminfo(target.read_file("/proc/meminfo"))
            if "MemTotal" in mem and "MemAvailable" in mem:
                check["mem_used_kib"] = mem["MemTotal"] - mem["MemAvailable"]
                check["mem_total_kib"] = mem["MemTotal"]
        except (TargetError, ValueError):
            pass
    usage = capabilities.host_usage(target)
    if usage:
        # Every guest of a qemu environment (a neighbour's own check has none: this one lists them all).
        check["qemu"] = [{"guest": g["guest"], "pid": g["pid"], "rss_kib": g.get("rss_kib"),
                          "pss_kib": g.get("pss_kib")} for g in usage.get("guests", [])]
    return check
