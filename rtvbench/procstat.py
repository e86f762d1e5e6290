"""The CPU lines of /proc/stat as numbers (proc(5)): time each CPU spent in each state.

The runner reads /proc/stat in the measured environment right before and right after
the probe runs (/proc/stat read at the start and the end of the measurement);
the analysis turns the two snapshots into busy percentages per CPU.
"""

from __future__ import annotations

#: the columns of a `cpuN` line, in the kernel's order, in USER_HZ ticks. `guest` and
#: `guest_nice` are already counted in `user` and `nice` (time this kernel spent running
#: a guest's vCPUs); `steal` is time a hypervisor gave this guest's vCPU to someone else.
FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice")


def parse_proc_stat(text: str) -> dict[str, dict[str, int]]:
    """{"cpu": {"user": ticks, ...}, "cpu0": {...}, ...}; raises ValueError if there is no
    aggregate `cpu` line. Columns an old kernel does not print are absent, not zero."""
    out: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        parts = line.split()
        if not parts or not parts[0].startswith("cpu"):
            continue
        try:
            values = [int(x) for x in parts[1:]]
        except ValueError:
            raise ValueError(f"unexpected /proc/stat line {line[:60]!r}") from None
        out[parts[0]] = dict(zip(FIELDS, values))
    if "cpu" not in out:
        raise ValueError("no aggregate `cpu` line: this is not /proc/stat")
    return out


#: the states a tick is charged to (`guest` and `guest_nice` are inside user and nice already)
STATES = tuple(f for f in FIELDS if f not in ("guest", "guest_nice"))
#: the states in which a CPU runs processes (the rest is idle, iowait, interrupts and steal)
PROCESS_STATES = ("user", "nice", "system")


def cpu_deltas(before: dict, after: dict) -> dict[str, dict[str, int]]:
    """Ticks per state between two snapshots, per line ("cpu" = all, "cpu0" ...), for the lines in
    both on which time passed (a CPU that went offline has none)."""
    out = {}
    for line, now in after.items():
        then = before.get(line)
        if not isinstance(then, dict) or not isinstance(now, dict):
            continue
        delta = {s: max(0, int(now.get(s, 0)) - int(then.get(s, 0))) for s in STATES}
        if sum(delta.values()) > 0:
            out[line] = delta
    return out


def process_share(delta: dict[str, int]) -> float:
    """The share of an interval a CPU spent running processes, in percent, from its cpu_deltas entry."""
    return 100.0 * sum(delta[s] for s in PROCESS_STATES) / sum(delta.values())


def parse_loadavg(text: str) -> dict[str, float]:
    """/proc/loadavg's three load averages (1, 5 and 15 minutes). Raises ValueError when it is not one."""
    fields = text.split()
    if len(fields) < 3:
        raise ValueError(f"not a /proc/loadavg line: {text[:80]!r}")
    return {"1": float(fields[0]), "5": float(fields[1]), "15": float(fields[2])}


def parse_meminfo(text: str) -> dict[str, int]:
    """MemTotal and MemAvailable of /proc/meminfo, in KiB, those that are there (a kernel before 3.14
    has no MemAvailable). Raises ValueError on a line of them that holds no number."""
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in ("MemTotal", "MemAvailable") and value.split():
            out[key] = int(value.split()[0])
    return out


def parse_process_stat(text: str) -> tuple[str, str, int, int, str] | None:
    """(pid, name, utime + stime ticks, last CPU, parent pid) of one /proc/<pid>/stat line (proc(5)),
    or None when it is not one. The name may hold spaces and parentheses: it runs to the last ")"."""
    try:
        pid, rest = text.split(" (", 1)
        name, _, tail = rest.rpartition(")")
        fields = tail.split()
        # After ") ": state is field 3, ppid 4, utime 14, stime 15, processor 39 (1-based).
        return pid.strip(), name, int(fields[11]) + int(fields[12]), int(fields[36]), fields[1]
    except (ValueError, IndexError):
        return None


def mark_own(processes: dict[str, list], parents: dict[str, str], roots: set[str]) -> dict[str, list]:
    """Append to each process entry 1 when it is one of `roots` or descends from one (by its chain of
    parent pids), else 0: rtvbench's own processes, told from what else runs on the machine."""
    own: dict[str, bool] = dict.fromkeys(roots, True)

    def is_own(pid: str) -> bool:
        chain = []
        while pid not in own and pid in parents and len(chain) < 4096:
            chain.append(pid)
            pid = parents[pid]
        verdict = own.get(pid, False)
        own.update(dict.fromkeys(chain, verdict))
        return verdict
    for pid, entry in processes.items():
        entry.append(int(is_own(pid)))
    return processes


def foreign_ticks(before: dict[str, list], after: dict[str, list], on_cpus: tuple[str, ...],
                  exclude: set[str] = frozenset()) -> int | None:
    """Ticks that processes rtvbench did not start took between two process lists, counting those that
    last ran on `on_cpus`. None when the lists do not mark rtvbench's own (lists recorded before they
    did), since then a load's workers cannot be told from other processes."""
    total = 0
    for pid, entry in after.items():
        if not isinstance(entry, list) or len(entry) < 4:
            return None
        name, ticks, cpu, own = entry[:4]
        if own == 1 or pid in exclude or name in exclude or str(cpu) not in on_cpus:
            continue
        then = before.get(pid)
        total += max(0, int(ticks) - (int(then[1]) if isinstance(then, list) and len(then) > 1 else 0))
    return total


def busiest_processes(before: dict[str, list], after: dict[str, list], ticks_per_cpu: float,
                      on_cpus: tuple[str, ...] | None = None, exclude: set[str] = frozenset(),
                      top: int = 3, least: float = 1.0) -> list[tuple[str, str, float]]:
    """The processes that took the most CPU time between two process lists (Target.process_ticks:
    pid -> [name, ticks, last CPU]): (name, pid, % of one CPU), those that last ran on `on_cpus`
    only when given, leaving out the pids and names in `exclude`."""
    if ticks_per_cpu <= 0:
        return []
    out = []
    for pid, entry in after.items():
        try:
            name, ticks, cpu = entry[:3]
            then = before.get(pid, [name, 0, cpu])[1]
        except (TypeError, ValueError):
            continue
        if pid in exclude or name in exclude or (on_cpus is not None and str(cpu) not in on_cpus):
            continue
        if len(entry) > 3 and entry[3] == 1:          # rtvbench's own: the probe, a load, a worker
            continue
        share = 100.0 * (ticks - then) / ticks_per_cpu
        if share >= least:
            out.append((str(name), str(pid), share))
    return sorted(out, key=lambda x: -x[2])[:top]
