"""`validate` applies exactly the probe's ranges.

Every campaign key that becomes a probe option carries a ProbeRange (rtvbench/params.py). These
tests hold each one equal to the probe's own option table (`rtvb-probe --describe-options SUB`),
check that no ranged probe option a campaign could set is left without one, and that at both
ends of every range the campaign value is accepted by `validate` and its command by the probe
(`rtvb-probe --check-args`), while one step outside is refused by `validate`.
"""

from __future__ import annotations

import subprocess
from functools import cache
from pathlib import Path

import pytest
from pydantic import TypeAdapter, ValidationError

from campaign_ranges import edge_values, ranged_fields
from probe_records import records
from rtvbench.benchmarks import BENCHMARKS
from rtvbench.loads import load as load_folders
from rtvbench.loads.probe_load import ProbeLoadParams, kinds
from rtvbench.params import StrictModel

load_folders("params")
KINDS = kinds()

pytestmark = pytest.mark.functional

#: probe options with a range that no campaign key sets, and why
NOT_CAMPAIGN_KEYS = {
    ("latency", "histogram-us"): "only for the cyclictest output formats, which rtvbench does not read",
    ("latency", "cpu-dma-latency-us"): "rtvbench keeps the probe's default (0, as cyclictest)",
    ("ipc", "port"): "rtvbench starts the server on port 0 and reads the port it got",
    ("network", "port"): "rtvbench starts the receiver on port 0 and reads the port it got",
    ("ipc", "shm-size"): "rtvbench sizes a local region for the largest message (a guest's is the qemu "
                         "environment's shm_size_mb)",
    ("load", "duration-s"): "the runner stops a load at the end of each measurement",
}


def models() -> list[tuple[str, str, type[StrictModel]]]:
    """(probe subcommand, load kind or "", campaign model) for everything a campaign runs."""
    # A kind that runs a tool of its own instead of the probe has no probe options to agree with, nor
    # one without campaign keys (`boot`: the probe only proves it answers again).
    out = [(name, "", BENCHMARKS.get(name).Params) for name in BENCHMARKS.names()
           if BENCHMARKS.get(name).runs_probe and BENCHMARKS.get(name).Params.model_fields]
    out += [("load", kind, params) for kind, params in KINDS.items()]
    return out


@cache
def probe_table(probe: Path, sub: str) -> dict[str, dict]:
    proc = subprocess.run([str(probe), "--describe-options", sub], capture_output=True, text=True, timeout=10)
    assert proc.returncode == 0, proc.stderr
    return {r["option"]: r for r in records(proc.stdout)}


def check_args(probe: Path, argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([str(probe), "--check-args", *argv], capture_output=True, text=True, timeout=10)


def test_every_range_is_the_probes(probe):
    checked = 0
    for sub, _, model in models():
        table = probe_table(probe, sub)
        for field, (_, r) in ranged_fields(model).items():
            where = f"{model.__name__}.{field} (--{r.option})"
            assert r.option in table, f"{where}: the probe's {sub} has no such option"
            t = table[r.option]
            assert ("min" in t, "max" in t) == (True, True), f"{where}: the probe states no range: {t}"
            assert (r.lo, r.hi) == (t["min"], t["max"]), f"{where}: {r.lo}..{r.hi} here, {t['min']}..{t['max']} in the probe"
            assert r.zero_ok == t.get("zero_ok", False), where
            assert r.cap == t.get("cap"), f"{where}: at most {r.cap} here, {t.get('cap')} in the probe"
            checked += 1
    assert checked >= 50, checked


def test_every_ranged_probe_option_has_a_campaign_key(probe):
    covered = {(sub, r.option) for sub, _, model in models() for _, r in ranged_fields(model).values()}
    missing = []
    for sub in {sub for sub, _, _ in models()}:
        for option, t in probe_table(probe, sub).items():
            ranged = "max" in t or "cap" in t
            if ranged and (sub, option) not in covered and (sub, option) not in NOT_CAMPAIGN_KEYS:
                missing.append(f"{sub} --{option}")
    assert not missing, f"probe options with a range that no campaign key carries: {missing}"


# ---------------------------------------------------------------------------
# Both ends of every range: accepted by validate and by the probe; one step outside: refused.


def _with(field: str, value) -> dict:
    """Keys a value needs beside it: a real-time priority needs a real-time policy (and 0, none), what
    the trace keeps needs the threshold that starts it."""
    if field == "priority":
        return {"policy": "fifo" if value else "other", "priority": value}
    if field in ("trace_breaches", "trace_history_ms"):
        return {"trace_threshold_us": 100, field: value}
    return {field: value}


def cases():
    seen = set()
    for sub, kind, model in models():
        for field, (tp, r) in ranged_fields(model).items():
            # The keys every probe load shares are tried once, with the cpu kind.
            if kind and field in ProbeLoadParams.model_fields and kind != "cpu":
                continue
            if (model, field) not in seen:
                seen.add((model, field))
                yield pytest.param(sub, kind, model, field, tp, r, id=f"{sub}{'-' + kind if kind else ''}.{field}")


#: rules between keys that a campaign keeps and the probe does not, and why
HOST_RULES = {
    ("latency", "work_us"): "a work budget of a whole period misses every deadline: the probe runs it (its "
                            "overrun accounting is tested so), a campaign asks for something else",
}
#: keys a benchmark needs to validate at all, or to pass every key it has to the probe (hwlat's window)
BASE = {"latency": {"loops": 1}, "network": {"peer": "partner"}, "kernel-tracer": {"tracer": "hwlat"}}
#: keys that replace the base (a latency run ends by loops or by duration, not both)
BASE_CONFLICTS = {("latency", "loops"), ("latency", "duration_s")}


@pytest.mark.parametrize("sub,kind,model,field,tp,r", list(cases()))
def test_range_ends_are_accepted_and_outside_refused(probe, sub, kind, model, field, tp, r):
    """One step outside the range, the key alone is refused. At the ends, the key alone is
    accepted, and the whole campaign table is accepted exactly when the probe accepts its command:
    some ends meet a rule between keys (a 1-byte chain holds no two slots; op "copy" needs 16K),
    which both sides must then apply alike."""
    adapter = TypeAdapter(tp)
    inside, outside = edge_values(tp, r)
    for value in outside:
        with pytest.raises(ValidationError):
            adapter.validate_python(value)
    for value in inside:
        base = {} if (sub, field) in BASE_CONFLICTS else BASE.get(sub, {})
        keys = {**base, **_with(field, value)}
        try:
            params, host_ok = model.model_validate(keys), True
        except ValidationError:
            checked = {k: adapter.validate_python(v) if k == field else v for k, v in keys.items()}
            params, host_ok = model.model_construct(**checked), False
        argv = params.probe_args(kind) if kind else BENCHMARKS.get(sub)("b", params).probe_args()
        proc = check_args(probe, argv)
        if not host_ok and proc.returncode == 0 and (sub, field) in HOST_RULES:
            continue
        assert (proc.returncode == 0) == host_ok, \
            f"{field} = {value!r}: validate {'accepts' if host_ok else 'refuses'}, the probe says: " \
            f"{proc.stderr or 'fine'} ({' '.join(argv)})"


def test_check_args_refuses_what_the_probe_refuses(probe):
    # The mode's own ground truth: a value outside the table's range and a cross-option rule.
    assert check_args(probe, ["latency", "--interval-us", "3600000001"]).returncode == 2
    assert check_args(probe, ["load", "--kind", "cpu", "--priority", "5"]).returncode == 2
    proc = check_args(probe, ["latency", "--interval-us", "3600000000", "--cpus", "1023"])
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
