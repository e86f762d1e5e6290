"""Mutated and hostile campaign files, generated with a fixed seed from the examples: validation either
accepts the campaign (and can plan it, and the probe accepts every command it would run) or raises
CampaignError / InputError with FILE:LINE: key lines — never another exception, never a hang, never a
plan that does not fit in memory."""

from __future__ import annotations

import copy
import math
import random
import resource
import signal
import subprocess
import time
from pathlib import Path

import pytest

from campaign_ranges import edge_values, ranged_fields
from rtvbench.analysis.metrics import known_figure
from rtvbench.campaign.reader import CampaignError, default_campaign_path, parse_campaign, tomllib
from rtvbench.errors import InputError
from rtvbench.benchmarks import BENCHMARKS
from rtvbench.loads.probe_load import ProbeLoad, kinds
from rtvbench.campaign.plan import plan
from rtvbench.targets.local import LocalTarget
from rtvbench.targets.shm import PCI_ARGS

LOAD_KINDS = kinds()                    # the campaign module has loaded the load folders

pytestmark = pytest.mark.functional

ROOT = Path(__file__).resolve().parent.parent
SEED = 1123
CASES = 360
HOSTILE = [float("nan"), float("inf"), -float("inf"), 10**30, -(10**30), 2**63, -1, 0, 1e-300, 1e308, "",
           "x" * 5000, "[/x]", "\x1b]0;t\x07", "0-99999999999", "3-1", [], [1, "x"], [[1]], {}, {"a": {"b": 1}},
           True, "all", "..", "/dev/zero", "ü€😀", 99999, "1e400",
           # the ends of the probe's ranges, where validate and the probe must agree
           3600000000, 1023, 1024, 1e7, 0.001, 0.01, 16, 256, 257, 100000, "16G", "0-1023", [0, 1023], 2**63 - 1]


def _sources() -> list[tuple[str, dict]]:
    paths = sorted((ROOT / "examples").glob("*.toml")) + [default_campaign_path()]
    return [(p.name, tomllib.loads(p.read_text(encoding="utf-8"))) for p in paths]


# -- a small TOML writer: what the mutated data must become again ------------------------------

def _key(k: str) -> str:
    return k if k and all(c.isalnum() or c in "_-" for c in k) else _value(k)


def _value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, str):
        return '"' + "".join(c if c.isprintable() and c not in '"\\' else f"\\u{ord(c):04x}" if ord(c) < 0x10000
                             else f"\\U{ord(c):08x}" for c in v) + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(v)


def to_toml(data: dict) -> str:
    lines = [f"{_key(k)} = {_value(v)}" for k, v in data.items()
             if not isinstance(v, dict) and not (isinstance(v, list) and v and all(isinstance(x, dict) for x in v))]
    for k, v in data.items():
        if isinstance(v, dict):
            for name, table in v.items():
                if isinstance(table, dict):
                    lines.append(f"[{_key(k)}.{_key(name)}]")
                    lines += [f"{_key(a)} = {_value(b)}" for a, b in table.items()]
                else:
                    lines.append(f"[{_key(k)}]\n{_key(name)} = {_value(table)}")
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for table in v:
                lines.append(f"[[{_key(k)}]]")
                lines += [f"{_key(a)} = {_value(b)}" for a, b in table.items()]
    return "\n".join(lines) + "\n"


def mutate(rng: random.Random, data: dict) -> dict:
    data = copy.deepcopy(data)
    for _ in range(rng.randint(1, 3)):
        tables = [(data, None)] + [(t, s) for s in ("environments", "loads", "benchmarks")
                                   for t in (data.get(s) or {}).values() if isinstance(t, dict)]
        requirements = data.get("requirements")
        if isinstance(requirements, list):          # a mutation may have replaced the list itself
            tables += [(r, "requirements") for r in requirements if isinstance(r, dict)]
        table, _ = rng.choice(tables)
        how = rng.randrange(5)
        keys = [k for k in table if not isinstance(table[k], dict) or table is not data]
        if how == 0 and keys:                       # a hostile value
            table[rng.choice(keys)] = copy.deepcopy(rng.choice(HOSTILE))
        elif how == 1 and keys:                     # a key gone
            del table[rng.choice(keys)]
        elif how == 2:                              # an unknown or misspelt key
            table[rng.choice(["colour", "interval_ms", "kind ", "count", "cpus", "where", "peer"])] = \
                copy.deepcopy(rng.choice(HOSTILE))
        elif how == 3:                              # another kind, target or section name
            section = rng.choice(["environments", "loads", "benchmarks"])
            names = list((data.get(section) or {}))
            if names and isinstance(data[section][names[0]], dict):
                data[section][names[0]][rng.choice(["kind", "target"])] = rng.choice(
                    ["latency", "qemu", "ssh", "labgrid", "combine", "command", "os", "nope", 1])
        else:                                       # a requirement on anything
            if not isinstance(data.get("requirements"), list):
                data["requirements"] = []
            data["requirements"].append(
                {rng.choice(["metric", "overhead"]): rng.choice(["wakeup.max_us", "x.y", "mem.lat.4KiB_seq",
                                                                 "wakeup.cpu1.over_5us", "", "a.b.c"]),
                 rng.choice(["max", "min", "max_percent"]): rng.choice(HOSTILE[:12]),
                 "baseline": "native", "candidate": rng.choice(["guest", "native"])})
    return data


class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang


def _with_region(argv: list[str]) -> tuple[str, ...]:
    """An ipc command over shm as a guest's target completes it (rtvbench/targets/shm.py): the target,
    not the campaign, names the region."""
    if "shm" in argv and not {"--shm-path", "--shm-pci"} & set(argv):
        argv = [*argv, *PCI_ARGS]
    return tuple(argv)


def probe_commands(c) -> list[tuple[str, ...]]:
    """Every probe command line a campaign runs: its benchmarks (both ends of an ipc round trip
    between environments) and its probe loads."""
    out = []
    for b in c.benchmarks.values():
        if not b.runs_probe:
            continue                    # an external tool: not the probe's to accept
        if b.peer is not None:
            out += [_with_region(b.server_args()), _with_region(b.client_args("127.0.0.1", 5000))]
        else:
            out.append(tuple(b.probe_args()))
    out += [tuple(load.probe_args()) for load in c.loads.values() if isinstance(load, ProbeLoad)]
    return out


def _validate_cases(rng: random.Random, cases: int, mutator) -> tuple[dict, dict, float]:
    """Validate `cases` campaigns made by mutator(rng, data) from the sources: each one valid (and
    plannable) or FILE:LINE: key errors, each within 10 s of CPU time. Returns the outcome counts, the
    probe commands of the valid ones (-> a campaign text using each) and the most CPU time one took.

    CPU time, not wall time: what is checked is that no input makes validation blow up (a quadratic
    split, a range expanded in memory), which shows in this process's own CPU time, while its wall time
    also counts whatever else the machine runs. A wall-clock alarm, far above it, stops one that blocks."""
    sources = _sources()
    commands: dict[tuple[str, ...], str] = {}
    outcome = {"valid": 0, "invalid": 0}
    worst = 0.0
    old = signal.signal(signal.SIGALRM, _alarm)
    old_prof = signal.signal(signal.SIGPROF, _alarm)
    try:
        for i in range(cases):
            name, data = rng.choice(sources)
            text = to_toml(mutator(rng, data))
            start = time.process_time()
            signal.setitimer(signal.ITIMER_PROF, 10)
            signal.alarm(120)
            try:
                c = parse_campaign(text, f"case{i}.toml", ROOT / "examples", known_figure)
                assert len(plan(c)) == c.measurement_count
                commands.update((argv, text) for argv in probe_commands(c))
                outcome["valid"] += 1
            except CampaignError as e:
                assert all(line.startswith(f"case{i}.toml") for line in e.issue_lines()), e.issue_lines()
                outcome["invalid"] += 1
            except InputError as e:
                assert str(e), text
                outcome["invalid"] += 1
            except _Hang:
                pytest.fail(f"validation of a mutation of {name} took more than 10 s of CPU time or 120 s in "
                            f"all:\n{text[:2000]}")
            finally:
                signal.setitimer(signal.ITIMER_PROF, 0)
                signal.alarm(0)
            worst = max(worst, time.process_time() - start)
    finally:
        signal.signal(signal.SIGALRM, old)
        signal.signal(signal.SIGPROF, old_prof)
    return outcome, commands, worst


def _probe_accepts(probe, commands: dict[tuple[str, ...], str]) -> None:
    """What validate accepted, the probe accepts (on any machine: CPU masks and directories are
    the target's to check at run time)."""
    for argv, text in commands.items():
        proc = subprocess.run([str(probe), "--check-args", *argv], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, f"rtvb-probe {' '.join(argv)}: {proc.stderr}\ncampaign:\n{text[:3000]}"


def test_mutated_campaigns_are_valid_or_file_line_key_errors(probe):
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    outcome, commands, worst = _validate_cases(random.Random(SEED), CASES, mutate)
    assert outcome["invalid"] > CASES // 2 and outcome["valid"] > 0, outcome
    assert worst < 5, worst
    # ru_maxrss is a high-water mark in KiB: a campaign that made validation expand a range or a
    # plan in memory would raise it by gigabytes.
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
    assert grown_mb < 500, grown_mb
    assert len(commands) >= 20, len(commands)
    _probe_accepts(probe, commands)
    print(f"campaign fuzz: {CASES} cases, {outcome}, {len(commands)} probe commands, worst {worst:.3f} s, "
          f"peak memory grown by {grown_mb:.0f} MB")


EDGE_CASES = 240


def edge_mutation(rng: random.Random, data: dict) -> dict:
    """One or two benchmark or load keys set to an end of the probe's range for them, or just
    beyond it (tests/test_probe_ranges.py names the ends)."""
    data = copy.deepcopy(data)
    for _ in range(rng.randint(1, 2)):
        tables = []
        for section, models in (("benchmarks", lambda k: BENCHMARKS.get(k)), ("loads", lambda k: LOAD_KINDS.get(k))):
            for table in (data.get(section) or {}).values():
                found = models(table.get("kind")) if isinstance(table, dict) else None
                model = getattr(found, "Params", found)
                if found is not None and ranged_fields(model):      # an external tool's kind has no probe range
                    tables.append((table, model))
        if not tables:
            break
        table, model = rng.choice(tables)
        fields = ranged_fields(model)
        field = rng.choice(sorted(fields))
        inside, outside = edge_values(*fields[field])
        table[field] = copy.deepcopy(rng.choice(inside + outside))
        if field in SWITCHED_ON_BY:
            table.setdefault(*SWITCHED_ON_BY[field])
    return data


#: keys that shape what another key switches on, and that key with a value in range: validate refuses them alone
SWITCHED_ON_BY = {"trace_breaches": ("trace_threshold_us", 100), "trace_history_ms": ("trace_threshold_us", 100)}


def test_campaigns_at_the_ends_of_the_probes_ranges_validate_as_the_probe_accepts(probe, monkeypatch):
    # The ends of the probe's ranges on any machine: validate would also refuse CPUs this one does not have.
    monkeypatch.setattr(LocalTarget, "known_cpus", lambda self: None)
    outcome, commands, worst = _validate_cases(random.Random(SEED + 1), EDGE_CASES, edge_mutation)
    assert outcome["valid"] > EDGE_CASES // 4 and outcome["invalid"] > EDGE_CASES // 4, outcome
    assert worst < 5, worst
    _probe_accepts(probe, commands)
    print(f"campaign edge fuzz: {EDGE_CASES} cases, {outcome}, {len(commands)} probe commands, "
          f"worst {worst:.3f} s")
