"""The environments' fingerprints side by side: the facts that move real-time and overhead figures first,
each summarised in one cell, then every other recorded field; a row differs when its cells differ.

A fingerprint is what the runner stores once per environment: the target's describe() (target kind,
accel ...), the probe's `sysinfo` record (docs/probe-output.md) and the probe's `meta` record of that
run (privileges). Fields that are missing are shown as "–"; a row that no environment has is dropped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

from rtvbench.cpulist import cpu_list_text, parse_cpu_list
from rtvbench.records import Privileges

MISSING = "–"


@dataclass
class FingerprintRow:
    label: str                  # "Kernel release", or the raw field path for the other fields
    values: list[str]           # one per environment, in FingerprintDiff.environments order
    key_fact: bool              # one of the summarised facts (always shown) or another recorded field
    differs: bool               # more than one environment and not all values equal


@dataclass
class FingerprintDiff:
    environments: list[str]
    rows: list[FingerprintRow]

    @property
    def differing(self) -> list[FingerprintRow]:
        return [r for r in self.rows if r.differs]

    def to_dict(self) -> dict[str, Any]:
        return {"environments": self.environments,
                "rows": [{"label": r.label, "key_fact": r.key_fact, "differs": r.differs,
                          "values": dict(zip(self.environments, r.values))} for r in self.rows]}


@dataclass
class _Print:
    describe: dict[str, Any]
    sysinfo: dict[str, Any]
    meta: dict[str, Any]
    granted: str | None = None          # what the measurements said about real-time priority


def _text(v: Any) -> str:
    if v is None:
        return MISSING
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (dict, list)):
        return json.dumps(v, sort_keys=True)
    return str(v)


def _size(n: Any) -> str:
    if not isinstance(n, int) or isinstance(n, bool):
        return MISSING
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _target(p: _Print) -> str:
    t, host = p.describe.get("target"), p.describe.get("host")
    # What runs there, where the target says it is no Linux (a bare-metal image).
    where = host or p.describe.get("system")
    return f"{_text(t)} ({_text(where)})" if where else _text(t)


def _accel(p: _Print) -> str:
    return _text(p.describe.get("accel"))


def _arch(p: _Print) -> str:
    return _text(p.sysinfo.get("machine") or p.describe.get("arch"))


def _preempt(p: _Print) -> str:
    return _text(p.sysinfo.get("preempt_model"))


def _hypervisor(p: _Print) -> str:
    h = p.sysinfo.get("hypervisor")
    if not isinstance(h, dict):
        return MISSING
    said = []
    if h.get("cpuid_vendor"):
        said.append(f"{h['cpuid_vendor']} (CPUID)")
    elif h.get("cpuid_bit"):
        said.append("CPUID hypervisor bit")
    if h.get("sys_hypervisor_type"):
        said.append(f"{h['sys_hypervisor_type']} (/sys/hypervisor)")
    if h.get("dt_hypervisor_compatible"):
        said.append(f"{h['dt_hypervisor_compatible']} (device tree)")
    dmi = " ".join(str(h[k]) for k in ("dmi_sys_vendor", "dmi_product_name") if h.get(k))
    if dmi:
        said.append(f"{dmi} (DMI)")
    if h.get("dt_model"):
        said.append(f"{h['dt_model']} (device tree model)")
    if h.get("container"):
        said.append(f"container {h['container']}")
    return "; ".join(said) if said else "none detected"


def _cpu_model(p: _Print) -> str:
    s = p.sysinfo
    if s.get("cpu_model"):
        return str(s["cpu_model"])
    if s.get("cpu_implementer") or s.get("cpu_part"):
        return f"implementer {s.get('cpu_implementer') or '?'}, part {s.get('cpu_part') or '?'}"
    return _text(s.get("cpu_isa"))


def _cpus(p: _Print) -> str:
    s = p.sysinfo
    n, online = s.get("cpus_online_count"), s.get("cpus_online")
    if n is None and online is None:
        return _text(p.describe.get("cpus"))
    text = f"{n} ({online})" if online else _text(n)
    allowed = s.get("cpus_allowed")
    if allowed and allowed != online:
        text += f"; probe may use {allowed}"
    return text


def _cpu_set(v: Any) -> str:
    if v is None:
        return MISSING
    if v == "":
        return "none"
    cpus = parse_cpu_list(v)
    return cpu_list_text(cpus) if cpus else str(v)


def _isolated(p: _Print) -> str:
    return _cpu_set(p.sysinfo.get("cpus_isolated"))


def _nohz(p: _Print) -> str:
    s = p.sysinfo
    if "nohz_full" in s and s["nohz_full"] is None:
        return "not in this kernel"
    return _cpu_set(s.get("nohz_full"))


def _governors(p: _Print) -> str:
    s = p.sysinfo
    govs = s.get("scaling_governors")
    if "scaling_governors" in s and govs is None:
        return "no cpufreq"
    if not isinstance(govs, dict) or not govs:
        return MISSING
    by: dict[str, list[int]] = {}
    for cpu, g in govs.items():
        if str(cpu).isdigit():
            by.setdefault(str(g), []).append(int(cpu))
    text = (next(iter(by)) if len(by) == 1 else
            "; ".join(f"{g} on {cpu_list_text(c)}" for g, c in sorted(by.items())))
    return text + (f" ({s['scaling_driver']})" if s.get("scaling_driver") else "")


def _idle(p: _Print) -> str:
    s = p.sysinfo
    c = s.get("cpuidle")
    if "cpuidle" in s and c is None:
        return "no cpuidle"
    if not isinstance(c, dict):
        return MISSING
    states = []
    for st in c.get("states") or []:
        if isinstance(st, dict):
            lat = st.get("exit_latency_us")
            states.append(f"{st.get('name', '?')}" + (f" {lat} us" if lat is not None else "")
                          + (" (disabled)" if st.get("disabled") else ""))
    head = f"{c.get('driver') or '?'}/{c.get('governor') or '?'}"
    return head + (": " + ", ".join(states) if states else "")


def _thp(p: _Print) -> str:
    s = p.sysinfo
    if s.get("thp_enabled") is None:
        return MISSING
    return f"{s['thp_enabled']}" + (f" (defrag {s['thp_defrag']})" if s.get("thp_defrag") else "")


def _rt_throttling(p: _Print) -> str:
    runtime, period = p.sysinfo.get("sched_rt_runtime_us"), p.sysinfo.get("sched_rt_period_us")
    if runtime is None:
        return MISSING
    if runtime == -1:
        return "off"
    if isinstance(runtime, int) and isinstance(period, int) and period > 0:
        return f"{runtime} us per {period} us ({100 * runtime / period:g} %)"
    return _text(runtime)


def _memory(p: _Print) -> str:
    s = p.sysinfo
    total = s.get("mem_total_bytes")
    if total is None:
        mb = p.describe.get("memory_mb")
        return f"{mb} MiB (guest)" if mb is not None else MISSING
    return _size(total)


def _cgroup(p: _Print) -> str:
    cg = p.sysinfo.get("cgroup")
    if not isinstance(cg, dict):
        return MISSING
    if cg.get("version") is None:
        return "no cgroups"
    return (f"v{cg['version']}: cpu.max {cg.get('cpu_max') or 'none'}, memory.max {cg.get('memory_max') or 'none'}"
            f", cpuset {cg.get('cpuset_cpus') or 'none'}")


def _privileges(p: _Print) -> str:
    euid = Privileges.of(p.meta).euid
    text = MISSING if euid is None else ("root" if euid == 0 else f"user id {euid}")
    if p.granted:
        text = (text + "; " if text != MISSING else "") + p.granted
    return text


def _boot(p: _Print) -> str:
    """A guest's boot time: QEMU start to the probe's `ready` on the host's clock, and the part of
    it the guest's kernel and init took (its CLOCK_BOOTTIME at `ready`)."""
    total, inside = p.describe.get("boot_s"), p.describe.get("guest_boottime_ns")
    if not isinstance(total, (int, float)):
        return MISSING
    text = f"{total:.2f} s"
    if isinstance(inside, (int, float)):
        text += f" (kernel + init {inside / 1e9:.2f} s)"
    return text


# (label, summary, raw fields the summary stands for: left out of the other fields)
KEY_FACTS: list[tuple[str, Callable[[_Print], str], tuple[str, ...]]] = [
    ("Target", _target, ("target.target", "target.host", "target.system")),
    ("Accelerator", _accel, ("target.accel",)),
    ("Boot time", _boot, ("target.boot_s", "target.guest_boottime_ns")),
    ("Architecture", _arch, ("machine", "target.arch")),
    ("Host name", lambda p: _text(p.sysinfo.get("hostname") or p.describe.get("hostname")),
     ("hostname", "target.hostname")),
    ("Kernel release", lambda p: _text(p.sysinfo.get("kernel_release") or p.describe.get("kernel_release")),
     ("kernel_release",)),
    ("Preemption model", _preempt, ("preempt_model",)),
    ("Hypervisor", _hypervisor, ("hypervisor.",)),
    ("Clocksource", lambda p: _text(p.sysinfo.get("clocksource")), ("clocksource",)),
    ("CPU model", _cpu_model, ("cpu_model", "cpu_implementer", "cpu_part", "cpu_isa")),
    ("CPUs online", _cpus, ("cpus_online", "cpus_online_count", "cpus_allowed", "cpus_allowed_count",
                            "target.cpus")),
    ("Isolated CPUs", _isolated, ("cpus_isolated",)),
    ("nohz_full", _nohz, ("nohz_full",)),
    ("CPU frequency governor", _governors, ("scaling_governors.", "scaling_driver")),
    ("Idle states", _idle, ("cpuidle.",)),
    ("Transparent huge pages", _thp, ("thp_enabled", "thp_defrag")),
    ("RT throttling", _rt_throttling, ("sched_rt_runtime_us", "sched_rt_period_us")),
    ("Memory", _memory, ("mem_total_bytes", "target.memory_mb")),
    ("cgroup limits", _cgroup, ("cgroup.",)),
    ("Probe privileges", _privileges, ("probe.privileges.",)),
]


def _flatten(record: Any, prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    if isinstance(record, dict):
        for k, v in record.items():
            if not prefix and k == "type":
                continue
            out.update(_flatten(v, f"{prefix}{k}."))
        return out
    if isinstance(record, list):
        out[prefix[:-1]] = ", ".join(json.dumps(x, sort_keys=True) if isinstance(x, (dict, list)) else str(x)
                                     for x in record)
    else:
        out[prefix[:-1]] = _text(record)
    return out


def _raw(p: _Print) -> dict[str, str]:
    """Every recorded field: sysinfo fields by their name, describe() under `target.`, the probe's meta
    (version, privileges) under `probe.`."""
    out = _flatten(p.sysinfo)
    # The runner's busy sample before the run rides with describe() but is a condition of that
    # moment, not a property of the environment (preflight reads it).
    out.update(_flatten({k: v for k, v in p.describe.items() if k != "busy_before_run"}, "target."))
    probe = {k: p.meta[k] for k in ("probe_version", "privileges") if k in p.meta}
    out.update(_flatten(probe, "probe."))
    return out


def _covered(key: str) -> bool:
    for _, _, fields in KEY_FACTS:
        for f in fields:
            if key == f or (f.endswith(".") and (key.startswith(f) or key == f[:-1])):
                return True
    return False


def fingerprint_diff(environments: list[str], sysinfo: dict[str, dict[str, Any]],
                     describe: dict[str, dict[str, Any]] | None = None,
                     meta: dict[str, dict[str, Any]] | None = None,
                     granted: dict[str, str] | None = None) -> FingerprintDiff | None:
    """The side-by-side fingerprint of every environment that has one (declared order first).
    `granted`: per environment, a note on what the measurements said about real-time priority."""
    describe, meta, granted = describe or {}, meta or {}, granted or {}
    known = set(sysinfo) | set(describe) | set(meta)
    names = [e for e in environments if e in known] + sorted(e for e in known if e not in environments)
    if not names:
        return None
    prints = {e: _Print(describe.get(e) or {}, sysinfo.get(e) or {}, meta.get(e) or {}, granted.get(e))
              for e in names}
    several = len(names) > 1
    rows = []
    for label, summary, _ in KEY_FACTS:
        values = [summary(prints[e]) for e in names]
        if all(v == MISSING for v in values):
            continue
        rows.append(FingerprintRow(label, values, True, several and len(set(values)) > 1))
    raw = {e: _raw(prints[e]) for e in names}
    for key in sorted({k for r in raw.values() for k in r}):
        if _covered(key):
            continue
        values = [raw[e].get(key, MISSING) for e in names]
        rows.append(FingerprintRow(key, values, False, several and len(set(values)) > 1))
    return FingerprintDiff(names, rows)
