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
