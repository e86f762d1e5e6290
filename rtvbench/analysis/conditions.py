"""Measurement conditions: did the measured CPUs belong to the measurement?

From the /proc/stat snapshots around each measurement (rtvbench.analysis.cpu_usage) and the
probe's own CPU time (its `end` record): the time the measured CPUs spent running processes
(user + nice + system) beyond what the probe itself used is *foreign* — other processes on the
machine, not the platform under test. Interrupt time is not counted as foreign: a platform's
interrupts are part of what is measured. `steal` (a hypervisor running something else on a
vCPU) is judged on its own.

The round-trip server rtvbench runs beside the probe in the peer's own cell (a benchmark's `peer` is
the environment measured) is rtvbench's too: its CPU time, from its `end` record, counts as the
probe's, and its pid is left out of the process lists with the probe's.

Under a load, /proc/stat does not tell the load's time from other processes', so foreign time is
counted process by process instead, from the process lists taken around the measurement where the
target can list its processes (this machine, ssh boards): the CPU time of every process rtvbench did
not start (not the runner, the probe, a load or its workers), by the measured CPU it last ran on. A
process that starts and ends between the two lists is not seen; in guests foreign time under a load
is not judged, and the report says so.
A measurement whose conditions are not met keeps its figures, but they are marked wherever they
appear and a requirement on them is INCONCLUSIVE, never PASS or FAIL.

The measured CPUs are those the benchmark pins to, else every CPU of the environment; the
judgement is over their total, so a probe that migrates between them is not mistaken for a
foreign process.
"""

from __future__ import annotations

from dataclasses import dataclass

from rtvbench.analysis.cpu_usage import measurement_usage
from rtvbench.analysis.dataset import RunData
from rtvbench.cpulist import cpus_words
from rtvbench.procstat import PROCESS_STATES, busiest_processes, foreign_ticks
from rtvbench.results import Measurement
from rtvbench.units import counted

DEFAULT_MAX_FOREIGN_PERCENT = 5.0
DEFAULT_MAX_STEAL_PERCENT = 2.0


@dataclass
class Conditions:
    judged: bool                    # whether foreign time could be judged (steal always is, when read)
    ok: bool                        # nothing judged exceeded its limit
    foreign_percent: float | None   # of the measured CPUs' time, beyond the probe's own
    steal_percent: float | None     # of the measured CPUs' time
    cpus: tuple[str, ...]           # the measured CPUs ("0", "1" ...)
    busiest: str | None             # the measured CPU with the most process time, for the message
    reason: str                     # why not met, or why foreign time was not judged ("" when met)
    load_average: float | None = None   # the environment's 1-minute load average when the probe ended

    def to_dict(self) -> dict:
        return {"judged": self.judged, "ok": self.ok, "foreign_percent": self.foreign_percent,
                "steal_percent": self.steal_percent, "cpus": list(self.cpus), "reason": self.reason or None,
                "load_average": self.load_average}


def limits(data: RunData) -> tuple[float, float]:
    c = data.spec.conditions
    return (float(c.get("max_foreign_percent", DEFAULT_MAX_FOREIGN_PERCENT)),
            float(c.get("max_steal_percent", DEFAULT_MAX_STEAL_PERCENT)))


def _cpu_words(cpus: tuple[str, ...]) -> str:
    return cpus_words(int(c) for c in cpus)


def measurement_conditions(data: RunData, m: Measurement) -> Conditions | None:
    """The conditions of one measurement, or None when they were not recorded (no /proc/stat)."""
    usage = {u.cpu: u for u in measurement_usage(m) if u.cpu != "all"}
    if not usage:
        return None
    spec = data.benchmark(m.benchmark)
    pinned = spec.placement.pinned if spec is not None else None
    cpus = tuple(str(c) for c in pinned if str(c) in usage) if pinned else tuple(sorted(usage, key=int))
    if not cpus:
        return None
    max_foreign, max_steal = limits(data)
    n = len(cpus)
    running = {c: sum(usage[c].percent.get(s, 0.0) for s in PROCESS_STATES) for c in cpus}   # % per CPU
    steal = sum(usage[c].percent.get("steal", 0.0) for c in cpus) / n
    busiest = max(cpus, key=running.get)
    problems = []
    # A single tick (10 ms) is /proc/stat's resolution: 2 % of a 0.5 s measurement. One tick of steal
    # is not evidence of a noisy neighbour.
    steal_ticks = sum(usage[c].percent.get("steal", 0.0) * usage[c].ticks / 100 for c in cpus)
    if steal > max_steal and steal_ticks > 1.5:
        problems.append(f"{steal:.0f} % of the time of {_cpu_words(cpus)} was stolen by the hypervisor "
                        f"(limit {max_steal:g} %)")
    end = m.probe_end
    cpu_ns, elapsed_ns = (end.cpu_time_ns, end.elapsed_ns) if end is not None else (None, None)
    load = data.load(m.load)
    foreign = None
    judged = True
    why_not = ""
    if load is not None and not load.is_idle:
        # /proc/stat does not tell the load's time from other processes': count the processes that
        # are not rtvbench's one by one, where the target lists them.
        ticks = _foreign_ticks(m, cpus)
        if ticks is None:
            judged, why_not = False, (f"under load `{m.load}` other processes are not told apart from the load's "
                                      "(the target does not list its processes)")
        else:
            # A process is counted by the CPU it last ran on and may have run on others too; of the
            # measured CPUs it took at most what they spent running processes.
            ran = sum(running[c] * usage[c].ticks / 100.0 for c in cpus)
            foreign = 100.0 * min(ticks, ran) / max(1, sum(usage[c].ticks for c in cpus))
    elif cpu_ns is None or elapsed_ns is None or elapsed_ns <= 0:
        judged, why_not = False, "the probe's own CPU time is not recorded (a probe older than this rtvbench)"
    else:
        own = 100.0 * (cpu_ns + _server_cpu_ns(m)) / elapsed_ns     # CPU-% the probe (and its server) used
        foreign = max(0.0, sum(running.values()) - own) / n
    if foreign is not None and foreign > max_foreign:
        other = ("the probe" + (", its round-trip server" if m.peer_server_end is not None else "")
                 + (" and the load" if load is not None and not load.is_idle else ""))
        text = (f"{foreign:.0f} % of the time of {_cpu_words(cpus)} went to processes other than {other} "
                f"({_cpu_words((busiest,))} {running[busiest]:.0f} % busy with processes; "
                f"limit {max_foreign:g} %)")
        named = foreign_processes(m, cpus, sum(usage[c].ticks for c in cpus) / n)
        if named:
            text += ": " + ", ".join(f"{name} (pid {pid}) {pct:.0f} %" for name, pid, pct in named)
        problems.append(text)
    load_average = m.load_average_after
    reason = "; ".join(problems) if problems else why_not
    if problems and load_average is not None:
        reason += f" (load average {load_average:.2f} when the probe ended)"
    return Conditions(judged, not problems, foreign, steal, cpus, busiest, reason, load_average)


def _server_cpu_ns(m: Measurement) -> int:
    """The CPU time of the round-trip server rtvbench ran beside the probe in the measured environment
    (the peer's own cell): rtvbench's own, as the probe's is."""
    end = m.peer_server_end
    return end.cpu_time_ns if end is not None and end.cpu_time_ns is not None else 0


def _own_processes(m: Measurement) -> set[str]:
    """The pids (and the probe's name) of rtvbench's own processes in a process list beside those
    marked as the runner's descendants: the probe, and the round-trip server it ran beside."""
    own = {str((m.meta or {}).get("pid")), "rtvb-probe"}
    if m.peer_server_pid is not None:
        own.add(str(m.peer_server_pid))
    return own


def _foreign_ticks(m: Measurement, cpus: tuple[str, ...]) -> int | None:
    before, after = m.cpu_stat.get("processes_before"), m.cpu_stat.get("processes_after")
    if not isinstance(before, dict) or not isinstance(after, dict):
        return None
    return foreign_ticks(before, after, cpus, _own_processes(m))


def foreign_processes(m: Measurement, cpus: tuple[str, ...], ticks_per_cpu: float) -> list[tuple[str, str, float]]:
    """The processes that took the most CPU time during the measurement on the measured CPUs (by
    the CPU each last ran on), the probe and its children left out: (name, pid, % of one CPU).
    Empty where the target does not list its processes."""
    before, after = m.cpu_stat.get("processes_before"), m.cpu_stat.get("processes_after")
    if not isinstance(before, dict) or not isinstance(after, dict):
        return []
    return busiest_processes(before, after, ticks_per_cpu, cpus, _own_processes(m))


@dataclass
class CellConditions:
    environment: str
    load: str
    benchmark: str
    measured: int                   # repetitions with conditions recorded
    failed: list[tuple[int, Conditions]]    # (repetition, conditions) of those not met

    @property
    def ok(self) -> bool:
        return not self.failed

    def reason(self) -> str:
        """"conditions not met in 3 of 5 repetitions: 62 % of the time of CPU 0 went to ..." (the worst)."""
        if not self.failed:
            return ""
        worst = max(self.failed, key=lambda f: (f[1].foreign_percent or 0) + (f[1].steal_percent or 0))[1]
        return (f"conditions not met in {len(self.failed)} of {counted(self.measured, 'repetition')} of "
                f"`{self.benchmark}` "
                f"in `{self.environment}` under `{self.load}`: {worst.reason}")


def cell_conditions(data: RunData, env: str, load: str, bench: str) -> CellConditions:
    measured, failed = 0, []
    for m in data.measurements(env, load, bench, statuses=("ok", "interrupted")):
        c = measurement_conditions(data, m)
        if c is None:
            continue
        measured += 1
        if not c.ok:
            failed.append((m.repetition, c))
    return CellConditions(env, load, bench, measured, failed)
