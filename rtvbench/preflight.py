"""Preflight: what in the environments or the campaign will bend the numbers, said before they are measured.

`check()` is pure (no I/O): it reads the resolved campaign (`CampaignSpec`: what the runner is about
to run, or what a stored run ran) and each environment's fingerprint as `Runner._fingerprint` returns it —
`(Target.describe(), the probe's sysinfo record, the probe's meta record)` — so the runner can
print the warnings before the first measurement and the report can show the same warnings from
a stored run. What the measurements later observed (real-time priority and mlockall actually
granted or refused, from their meta records) can be passed as `observed`; it then replaces the
guess made from the privileges of the sysinfo run. The rules are documented in docs/preflight.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from rtvbench.cpulist import cpu_list_text, cpus_words, parse_cpu_list
from rtvbench.spec import BenchmarkSpec, CampaignSpec
from rtvbench.units import counted

#: probe load kinds (a `command` load's threads and placement are unknown)
#: the keys of a load that runs threads where they say (the probe's generators): others are not placed
PLACED_KEYS = {"workers", "cpus"}
RT_POLICIES = ("fifo", "rr")

#: every code check() can give, in the order warnings of one environment are listed
CODES = ("busy", "tcg", "no_rt_priority", "rt_not_root", "no_mlockall", "cpu_quota", "governor", "thp_always",
         "rt_throttling", "cpu_unavailable", "too_few_cpus", "load_outranks_measurement", "load_shares_cpu")


@dataclass(frozen=True)
class PreflightWarning:
    environment: str
    code: str               # one of CODES
    message: str            # one sentence: what it does to the numbers, what to do; names in backticks

    @property
    def sentence(self) -> str:
        """The message as a sentence of its own (every message names its environment)."""
        return self.message[:1].upper() + self.message[1:]

    def to_dict(self) -> dict[str, str]:
        return {"environment": self.environment, "code": self.code, "message": self.message}


@dataclass
class Observed:
    """Privileges the measurements of one environment reported (their meta and warning records)."""

    rt_requested: int = 0       # measurements that asked for a real-time policy
    rt_refused: int = 0
    mlock_requested: int = 0
    mlock_refused: int = 0
    benchmarks_refused: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------
# Small readers: a fingerprint may lack any field


@dataclass
class _Env:
    name: str
    describe: dict[str, Any]
    sysinfo: dict[str, Any]
    meta: dict[str, Any]

    @property
    def allowed(self) -> list[int] | None:
        """The CPUs the probe may run on: its affinity mask, else the online CPUs."""
        for key in ("cpus_allowed", "cpus_online"):
            cpus = parse_cpu_list(self.sysinfo.get(key))
            if cpus:
                return cpus
        n = self.describe.get("cpus")
        return list(range(n)) if isinstance(n, int) and not isinstance(n, bool) and n > 0 else None

    @property
    def euid(self) -> int | None:
        from rtvbench.records import Privileges     # the records' types: a run's, not validate's
        return Privileges.of(self.meta).euid


@dataclass
class _Load:
    name: str
    kind: str
    where: str
    pinned: list[int] | None
    workers: int
    rt_priority: int | None         # policy fifo/rr: its priority


def _int(v: Any, default: int) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def _loads(spec: CampaignSpec) -> list[_Load]:
    out = []
    for name, ld in spec.loads.items():
        p = ld.params
        if not PLACED_KEYS <= p.keys():
            continue        # idle, command (placement unknown), combine (its parts are loads of their own)
        rt = p.get("policy") in RT_POLICIES
        out.append(_Load(name, ld.kind, ld.where, parse_cpu_list(p["cpus"]) if p.get("cpus") is not None else None,
                         _int(p.get("workers"), 1), _int(p.get("priority"), 1) if rt else None))
    return out


def _runs_in(load: _Load, env: str) -> bool:
    """Whether the load runs in the environment (or, `neighbours`, in its other guests, which are
    guests of the same definition and so have the same CPUs and privileges)."""
    return load.where in ("same", env, "neighbours")


# ---------------------------------------------------------------------------


def observed_privileges(measurements: Iterable[Any], spec: CampaignSpec | None = None) -> dict[str, Observed]:
    """Per environment: how many measurements asked for a real-time policy / mlockall and how many were
    refused, from each measurement's `meta.privileges` (`rt_granted`, `mlockall`) and its `no_rt_policy` /
    `no_mlockall` warnings (rtvbench.results.Measurement objects, or anything with those attributes).
    With the resolved campaign, a benchmark it ran at a normal policy asked for no real-time priority,
    whatever its records say (a probe's meta without its params says only rt_granted false)."""
    from rtvbench.records import Privileges         # here: the campaign check before a run reads no records

    out: dict[str, Observed] = {}
    for m in measurements:
        p = Privileges.of(getattr(m, "meta", None))
        codes = {w.get("code") for w in (getattr(m, "warnings", None) or []) if isinstance(w, dict)}
        o = out.setdefault(m.environment, Observed())
        said = p.rt_granted is not None or "no_rt_policy" in codes
        if said and asks_rt_priority(spec, m.benchmark) is not False:
            o.rt_requested += 1
            if "no_rt_policy" in codes or p.rt_granted is False:
                o.rt_refused += 1
                if m.benchmark not in o.benchmarks_refused:
                    o.benchmarks_refused.append(m.benchmark)
        if p.mlockall is not None or "no_mlockall" in codes:
            o.mlock_requested += 1
            if "no_mlockall" in codes or p.mlockall is False:
                o.mlock_refused += 1
    return out


def asks_rt_priority(spec: CampaignSpec | None, benchmark: str) -> bool | None:
    """Whether the campaign ran the benchmark at a real-time policy (None: no spec says)."""
    b = spec.benchmarks.get(benchmark) if spec is not None else None
    return None if b is None else b.placement.rt_priority is not None


def check(spec: CampaignSpec | None, fingerprints: Mapping[str, tuple[dict, dict, dict]],
          observed: Mapping[str, Observed] | None = None) -> list[PreflightWarning]:
    """The preflight warnings of a campaign about to run (or that ran) on these environments.

    `spec`: the resolved campaign (Campaign.spec(), CampaignRun.spec). `fingerprints`: environment name ->
    (describe, sysinfo, meta), as Runner._fingerprint returns them; environments without a fingerprint are
    skipped. `observed`: what the measurements reported (observed_privileges), for a finished run."""
    if spec is None:
        return []
    declared = list(spec.environments)
    names = [e for e in declared if e in fingerprints] + [e for e in fingerprints if e not in declared]
    envs = {}
    for name in names:
        d, s, m = (tuple(fingerprints[name]) + ({}, {}, {}))[:3]
        envs[name] = _Env(name, d if isinstance(d, dict) else {}, s if isinstance(s, dict) else {},
                          m if isinstance(m, dict) else {})
    benches, loads = list(spec.benchmarks.values()), _loads(spec)
    out: list[PreflightWarning] = []
    for env in envs.values():
        found = _environment_warnings(env, benches, loads, (observed or {}).get(env.name))
        found += _cpu_warnings(env, benches, loads)
        found += _busy_warnings(env, benches)
        out += sorted(found, key=lambda w: CODES.index(w.code))
    return out


def _environment_warnings(env: _Env, benches: list[BenchmarkSpec], loads: list[_Load],
                          seen: Observed | None) -> list[PreflightWarning]:
    e, s, d = env.name, env.sysinfo, env.describe
    out = []

    def warn(code: str, message: str) -> None:
        out.append(PreflightWarning(e, code, message))

    if d.get("emulated"):       # a target that says so: a QEMU guest under TCG
        # The target's own word for what runs in the guest (a bare-metal image), where it has one.
        system = d.get("system")
        if isinstance(system, str) and system:
            warn("tcg", f"`{e}` is a {system} in a QEMU guest under TCG (software emulation, no KVM): its "
                        "latencies are mostly how soon QEMU's thread took the emulated interrupt on this busy "
                        "machine, not what the partition's CPU does; run it on hardware or under KVM for the "
                        "partition's own figures.")
        else:
            warn("tcg", f"`{e}` is a QEMU guest under TCG (software emulation, no KVM): its figures measure an "
                        "emulator, not the hypervisor, and are no estimate of a KVM guest or a board; run it on "
                        "a host with /dev/kvm for hypervisor figures.")

    rt_wanted = [b.name for b in benches if b.placement.rt_priority is not None] + \
                [ld.name for ld in loads if ld.rt_priority is not None and _runs_in(ld, e)]
    if seen is not None and seen.rt_refused:
        warn("no_rt_priority", f"real-time priority was refused in {seen.rt_refused} of "
                               f"{counted(seen.rt_requested, 'measurement')} in `{e}` ({', '.join(f'`{b}`' for b in seen.benchmarks_refused)}): "
                               "those wake-up latencies are a normal-priority thread's, not the real-time figures; "
                               "run the probe as root or raise its RLIMIT_RTPRIO.")
    elif rt_wanted and env.euid not in (None, 0) and not (seen is not None and seen.rt_requested):
        warn("rt_not_root", f"the probe runs as user id {env.euid} in `{e}`, so the real-time policy that "
                            f"{_names(rt_wanted)} ask{'s' if len(rt_wanted) == 1 else ''} for and mlockall will "
                            "be refused unless RLIMIT_RTPRIO and RLIMIT_MEMLOCK allow them, leaving normal-priority, "
                            "pageable latencies; run as root or raise those limits.")
    if seen is not None and seen.mlock_refused:
        warn("no_mlockall", f"mlockall was refused in {seen.mlock_refused} of "
                            f"{counted(seen.mlock_requested, 'measurement')} "
                            f"in `{e}`: page faults of the measuring thread can show up as latency spikes; run as "
                            "root or raise RLIMIT_MEMLOCK.")

    cg = s.get("cgroup") if isinstance(s.get("cgroup"), dict) else {}
    quota = cg.get("cpu_max")
    if isinstance(quota, str) and quota.split() and quota.split()[0] != "max":
        parts = quota.split()
        period = f" every {parts[1]} us" if len(parts) > 1 else ""
        warn("cpu_quota", f"the probe's cgroup in `{e}` may use only {parts[0]} us of CPU time{period} (cpu.max): "
                          "once the quota is spent the scheduler stops it, which shows as latency spikes and slower "
                          "run times; lift the limit (e.g. `docker --cpus`) or measure outside that cgroup.")

    govs = s.get("scaling_governors")
    if isinstance(govs, dict) and govs:
        other: dict[str, list[int]] = {}
        for cpu, g in govs.items():
            if g != "performance" and str(cpu).isdigit():
                other.setdefault(str(g), []).append(int(cpu))
        if other:
            which = "; ".join(f"`{g}` on {cpus_words(c)}" for g, c in sorted(other.items()))
            warn("governor", f"the CPU frequency governor in `{e}` is not `performance` ({which}): the clock "
                             "follows the load, so latencies and run times change with it and a comparison mixes "
                             "frequency changes with overhead; set `performance` "
                             "(`cpupower frequency-set -g performance`).")

    if s.get("thp_enabled") == "always":
        warn("thp_always", f"transparent huge pages are `always` in `{e}`: huge-page faults and khugepaged "
                           "compaction add latency spikes and make memory figures depend on whether a buffer got "
                           "huge pages; set `madvise` or `never` in /sys/kernel/mm/transparent_hugepage/enabled.")

    runtime, period = s.get("sched_rt_runtime_us"), s.get("sched_rt_period_us")
    rt_loads = [ld.name for ld in loads if ld.rt_priority is not None and _runs_in(ld, e)]
    if rt_loads and isinstance(runtime, int) and isinstance(period, int) and 0 <= runtime < period:
        warn("rt_throttling", f"RT throttling is on in `{e}` ({runtime} us of every {period} us for real-time "
                              f"tasks): the real-time load{'s' if len(rt_loads) > 1 else ''} {_names(rt_loads)} "
                              f"{'are' if len(rt_loads) > 1 else 'is'} stopped for the rest of each period, so "
                              "it cannot hold its full strength; set kernel.sched_rt_runtime_us to -1 for the "
                              "campaign if it should.")
    return out


#: a CPU busier than this with processes before the run is worth a warning
BUSY_PERCENT = 20.0


def _busy_warnings(env: _Env, benches: list[BenchmarkSpec]) -> list[PreflightWarning]:
    """The environment was already busy before the run (the runner's sample of it): the
    measurements will share the CPUs with that work, and the conditions will likely fail."""
    sample = env.describe.get("busy_before_run")
    if not isinstance(sample, dict) or not isinstance(sample.get("process_percent"), dict):
        return []
    measured = {str(c) for b in benches for c in (b.placement.pinned or [])}
    busy = {c: v for c, v in sample["process_percent"].items()
            if isinstance(v, (int, float)) and v >= BUSY_PERCENT and (not measured or c in measured)}
    if not busy:
        return []
    cpus = ", ".join(f"CPU {c} {v:.0f} %" for c, v in sorted(busy.items(), key=lambda x: int(x[0])))
    named = [p for p in sample.get("processes") or [] if isinstance(p, list) and len(p) == 3]
    who = (": " + ", ".join(f"{n} (pid {pid}) {share:.0f} %" for n, pid, share in named)) if named else ""
    return [PreflightWarning(env.name, "busy", f"`{env.name}` was already busy before the run ({cpus} of "
                                              f"{sample.get('seconds', 0):g} s ran processes{who}); measurements "
                                              "there share the CPUs with that work and their conditions will "
                                              "likely not be met: stop it, or pin the benchmarks elsewhere.")]


def _names(names: list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def _cpu_warnings(env: _Env, benches: list[BenchmarkSpec], loads: list[_Load]) -> list[PreflightWarning]:
    e = env.name
    allowed = env.allowed
    out = []

    def warn(code: str, message: str) -> None:
        out.append(PreflightWarning(e, code, message))

    have = f"the probe may use only {cpus_words(allowed)} in `{e}`" if allowed else ""
    if allowed:
        for b, place in ((b, b.placement) for b in benches):
            missing = sorted(set(place.pinned or []) - set(allowed))
            if missing:
                effect = ("its threads run unpinned instead" if place.unpinned_when_missing else
                          "so every measurement of it fails")
                warn("cpu_unavailable", f"benchmark `{b.name}` is pinned to {cpus_words(missing)} but {have}, "
                                        f"{effect}; pin it to CPUs from {cpu_list_text(allowed)}.")
            on = _usable(list(place.pinned or []), allowed)
            if place.threads > 1 and place.threads > len(on):
                warn("too_few_cpus", f"benchmark `{b.name}` runs {place.threads} threads on {_where(on, allowed, e)}: "
                                     "threads share CPUs, so the bandwidth is that of a time-shared machine, not "
                                     f"of {place.threads} streams; set `threads` to at most {len(on)}"
                                     + (" or list more CPUs in `cpus`." if on != allowed else "."))
        for ld in loads:
            if not _runs_in(ld, e):
                continue
            missing = sorted(set(ld.pinned or []) - set(allowed))
            if missing:
                warn("cpu_unavailable", f"load `{ld.name}` is pinned to {cpus_words(missing)} but {have}, so it "
                                        "cannot start and every measurement under it fails; pin it to CPUs from "
                                        f"{cpu_list_text(allowed)}.")
            on = _usable(ld.pinned, allowed)
            if ld.workers > len(on):
                warn("too_few_cpus", f"load `{ld.name}` starts {counted(ld.workers, 'worker')} on "
                                     f"{_where(on, allowed, e)}: "
                                     "workers share CPUs, so each gets less than it asks for and the achieved load "
                                     f"is not the one named; set `workers` to at most {len(on)}"
                                     + (" or list more CPUs in `cpus`." if on != allowed else "."))

    for b, place in ((b, b.placement) for b in benches):
        for ld in loads:
            if ld.where != "same" and ld.where != e:
                continue
            # A load in another environment or in the neighbouring guests runs on other (v)CPUs.
            bcpus = set(place.pinned) if place.pinned is not None else set(allowed or [])
            lcpus = set(ld.pinned) if ld.pinned is not None else set(allowed or [])
            shared = sorted(bcpus & lcpus)
            if not shared:
                continue
            if place.rt_priority is not None and ld.rt_priority is not None and ld.rt_priority >= place.rt_priority:
                warn("load_outranks_measurement",
                     f"load `{ld.name}` runs at real-time priority {ld.rt_priority}, not below the "
                     f"{place.rt_priority} of benchmark `{b.name}`, on {cpus_words(shared)} in `{e}`: the measuring "
                     "thread waits for the load instead of preempting it, so its figures include the load's "
                     "run time: intended when the load is the interference under study, otherwise give "
                     f"`{b.name}` a higher priority than the load.")
            elif place.pinned is not None and ld.pinned is not None and place.rt_priority is None:
                what = ("wake-ups wait for the load's time slice" if place.realtime_option else
                        "the two take turns on the CPU")
                warn("load_shares_cpu",
                     f"benchmark `{b.name}` and load `{ld.name}` are both pinned to {cpus_words(shared)} in `{e}` "
                     f"and the benchmark does not run at a real-time priority, so {what} and the figures measure "
                     "time-sharing by the scheduler rather than interference; pin the load to other CPUs"
                     + (", or give the benchmark a real-time policy." if place.realtime_option else "."))
    return out


def unusable_cpus(spec: CampaignSpec, allowed: Mapping[str, list[int]]) -> list[tuple[tuple, str]]:
    """What is pinned to CPUs an environment does not give the probe, so that every measurement of it (a
    benchmark) or under it (a load) would fail: (its key path, one sentence) each, from the CPUs the probe may
    use per environment (what validate knows of this machine and of a guest, what a fingerprint says)."""
    loads = _loads(spec)
    out = []
    for env, cpus in allowed.items():
        def refuse(section: str, name: str, pinned: Iterable[int]) -> None:
            missing = sorted(set(pinned) - set(cpus))
            if missing:
                out.append(((section, name, "cpus"), f"names {cpus_words(missing)}, but the probe may use only "
                            f"{cpus_words(cpus)} in environment {env}, where every measurement would fail; name "
                            f"CPUs from {cpu_list_text(cpus)}"))
        for b in spec.benchmarks.values():
            # A benchmark with a peer pins a CPU in each of two environments, which its placement does not tell apart.
            if not b.placement.unpinned_when_missing and not b.params.get("peer"):
                refuse("benchmarks", b.name, b.placement.pinned or ())
        for ld in loads:
            if _runs_in(ld, env):
                refuse("loads", ld.name, ld.pinned or ())
    return out


def fingerprint_cpus(describe: dict, sysinfo: dict) -> list[int] | None:
    """The CPUs the probe may use in an environment, as its fingerprint says, or None."""
    return _Env("", describe, sysinfo, {}).allowed


def _usable(pinned: list[int] | None, allowed: list[int]) -> list[int]:
    """The CPUs threads pinned round-robin to `pinned` end up on (all allowed ones when unpinned, or when
    no pinned CPU is available and the probe runs them unpinned)."""
    on = sorted(set(pinned or []) & set(allowed))
    return on if on else list(allowed)


def _where(on: list[int], allowed: list[int], env: str) -> str:
    if on == allowed:
        return f"the {len(on)} CPU{'s' if len(on) != 1 else ''} the probe may use in `{env}` ({cpu_list_text(on)})"
    return f"{cpus_words(on)} in `{env}`"


def format_warnings(warnings: list[PreflightWarning]) -> list[str]:
    """One line per warning for a terminal (each names its environment)."""
    return [f"preflight warning: {w.message}" for w in warnings]
