"""The resolved campaign (rtvbench.spec): built from the validated kinds with every default filled
in, stored with each run and read back typed; runs stored before it get theirs from their campaign
text; and the host's defaults are the probe's own."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import column, create_engine, insert, select, table

from rtvbench.benchmarks import BENCHMARKS
from rtvbench.campaign.reader import load_campaign, parse_campaign, stored_spec
from rtvbench.kinds.latency.keys import DEFAULT_PRIORITY
from rtvbench.spec import CampaignSpec, LoadSpec, SpecVersionError
from rtvbench.store import RunRecorder, load_run, open_store
from rtvbench.store.db import _alembic_config
from rtvbench.store.schema import runs

pytestmark = pytest.mark.functional

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

TEXT = """
name = "spec"

[environments.native]
target = "local"

[environments.guest]
target = "qemu"
arch = "x86_64"
kernel = "kernels/vmlinuz"
cpus = 2
count = 2

[loads.idle]

[loads.stress]
command = "stress-ng --cpu 1"
where = "native"

[loads.hog]
kind = "cpu"
percent = 50
cpus = [1]
where = "neighbours"

[loads.both]
combine = ["stress", "hog"]

[benchmarks.wakeup]
kind = "latency"
duration_s = 1

[benchmarks.calm]
kind = "latency"
loops = 10
policy = "other"

[benchmarks.chase]
kind = "mem-lat"
sizes = ["4K", "1M-4M"]

[[requirements]]
metric = "wakeup.max_us"
max = 100
"""


@pytest.fixture
def campaign_dir(tmp_path, monkeypatch):
    """A campaign directory with the guest's kernel, and a `stress-ng` the local target can find."""
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "vmlinuz").write_bytes(b"\0" * 1024)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "stress-ng").write_text("#!/bin/sh\n")
    (bin_dir / "stress-ng").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return tmp_path


def test_spec_fills_every_default_in_declared_order(campaign_dir):
    spec = parse_campaign(TEXT, "spec.toml", campaign_dir).spec()
    assert (spec.name, spec.repetitions, spec.seed) == ("spec", 1, 0)
    assert list(spec.environments) == ["native", "guest"]
    guest = spec.environments["guest"]
    assert guest.target == "qemu" and guest.guests == 2
    assert guest.params["kernel"] == str(campaign_dir / "kernels" / "vmlinuz")     # resolved
    assert guest.params["memory_mb"] == 512 and guest.params["accel"] == "auto"

    idle, stress, hog, both = (spec.loads[n] for n in ("idle", "stress", "hog", "both"))
    assert idle == LoadSpec("idle", None, {}, "same", (), ()) and idle.is_idle
    assert (stress.kind, stress.where, stress.commands) == ("command", "native", ("stress-ng --cpu 1",))
    assert stress.params == {"command": "stress-ng --cpu 1", "settle_s": 0.5}
    assert (hog.kind, hog.where, hog.params["percent"], hog.params["cpus"]) == ("cpu", "neighbours", 50, "1")
    assert (both.kind, both.parts, both.params) == ("combine", ("stress", "hog"), {})
    assert both.commands == stress.commands + hog.commands

    wakeup, calm, chase = (spec.benchmarks[n] for n in ("wakeup", "calm", "chase"))
    latency_keys = list(BENCHMARKS.get("latency").Params.model_fields)
    assert list(wakeup.params) == latency_keys                      # every key, declared order
    assert wakeup.params["priority"] == DEFAULT_PRIORITY == 80
    assert (wakeup.params["policy"], wakeup.params["interval_us"], wakeup.params["mode"]) == ("fifo", 1000, "abstime")
    assert calm.params["priority"] is None                          # policy other: no priority
    assert chase.params["sizes"] == [4096, "1048576-4194304"]        # as the probe gets them
    assert (chase.params["stride"], chase.params["mode"]) == (64, "both")
    assert spec.requirements == [{"metric": "wakeup.max_us", "max": 100}]


def test_spec_round_trips_through_json(campaign_dir):
    specs = [parse_campaign(TEXT, "spec.toml", campaign_dir).spec()] + [
        load_campaign(p).spec() for p in (None, EXAMPLES / "measurement-suite.toml", EXAMPLES / "interference.toml")]
    for spec in specs:
        data = json.loads(json.dumps(spec.to_json()))
        assert data["spec_version"] == 1
        assert CampaignSpec.from_json(data) == spec
        assert json.loads(json.dumps(CampaignSpec.from_json(data).to_json())) == data
    with pytest.raises(SpecVersionError):
        CampaignSpec.from_json({**specs[0].to_json(), "spec_version": 2})


def test_a_run_written_now_carries_its_spec(campaign_dir):
    campaign = parse_campaign(TEXT, "spec.toml", campaign_dir)
    engine = open_store(f"sqlite:///{campaign_dir}/s.db")
    recorder = RunRecorder.create(engine, campaign)
    with engine.connect() as conn:
        stored = conn.scalar(select(runs.c.spec).where(runs.c.id == recorder.id))
    assert stored == campaign.spec().to_json()
    run = load_run(engine, recorder.id)
    assert run.spec == campaign.spec()
    assert run.campaign == campaign.data                # the raw TOML is still there


def test_a_run_stored_before_specs_reads_back_with_one(campaign_dir, tmp_path):
    """A store at migration 0003 (no runs.spec) holding a run whose kernel, ssh config and load
    command are gone since: the store is upgraded and the run reads back with a spec built from its
    text, defaults filled, without any of those checks."""
    old = TEXT + """
[environments.board]
target = "ssh"
host = "root@board"
ssh_config = "gone/ssh_config"

[loads.gone]
command = "no-such-program-anywhere --now"
where = "board"
"""
    url = f"sqlite:///{tmp_path}/old.db"
    engine = create_engine(url)
    with engine.begin() as conn:
        cfg = _alembic_config()
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0003")
        assert "spec" not in {r[1] for r in conn.exec_driver_sql("pragma table_info(runs)")}
        conn.execute(_old_insert(old))
    engine.dispose()

    run = load_run(open_store(url), 1, stored_spec)     # upgrades to 0004 on the way
    # The store knows no campaign models: without the caller's rebuilder the run has no spec.
    assert load_run(open_store(url), 1).spec is None
    spec = run.spec
    assert spec is not None and spec == stored_spec(old)
    assert list(spec.environments) == ["native", "guest", "board"]
    assert spec.environments["guest"].params["kernel"] == "kernels/vmlinuz"        # as written
    assert spec.environments["guest"].params["memory_mb"] == 512
    assert spec.environments["board"].params == {"host": "root@board", "port": None,
                                                 "ssh_config": "gone/ssh_config", "options": [], "workdir": None,
                                                 "reboot_command": None, "machine": None, "boot_timeout_s": None}
    assert spec.loads["gone"].commands == ("no-such-program-anywhere --now",)
    assert spec.loads["idle"].is_idle
    assert spec.benchmarks["wakeup"].params["priority"] == 80
    assert spec.benchmarks["calm"].params["priority"] is None
    # What the same text validated in its own directory says, but for what only that directory knows.
    fresh = parse_campaign(TEXT, "spec.toml", campaign_dir).spec()
    assert spec.benchmarks == fresh.benchmarks and spec.requirements == fresh.requirements
    assert {n: ld for n, ld in spec.loads.items() if n != "gone"} == fresh.loads


def _old_insert(text: str):
    """The INSERT an rtvbench of migration 0003 made: every column but spec."""
    old_runs = table("runs", *(column(c) for c in ("campaign_name", "campaign_text", "campaign", "campaign_hash",
                                                   "seed", "status", "rtvbench_version", "started_at")))
    return insert(old_runs).values(
        campaign_name="spec", campaign_text=text, campaign=json.dumps({"name": "spec"}), campaign_hash="0" * 64,
        seed=0, status="finished", rtvbench_version="0.0.9",
        started_at=datetime.now(timezone.utc).isoformat(sep=" "))


def test_stored_spec_keeps_an_entry_this_version_would_refuse():
    text = """
name = "later"
[environments.e]
target = "local"
[loads.l]
kind = "teleport"
speed = 3
[benchmarks.b]
kind = "latency"
duration_s = 1
renamed_key = 5
"""
    spec = stored_spec(text)
    assert spec.loads["l"] == LoadSpec("l", "teleport", {"speed": 3}, "same", (), ())
    assert spec.benchmarks["b"].params["duration_s"] == 1
    assert spec.benchmarks["b"].params["interval_us"] == 1000


# ---------------------------------------------------------------------------
# Host and probe agree on every default both have


def _probe_meta(probe, *args: str) -> dict:
    out = subprocess.run([str(probe), *args], capture_output=True, text=True, timeout=120, check=True).stdout
    meta = json.loads(out.splitlines()[0])
    assert meta["type"] == "meta"
    return meta["params"]


# kind -> (campaign keys passed to both sides, probe arguments for them,
#          host key -> (probe key, host value as the probe echoes it),
#          host keys the probe does not echo or that stand for "the probe decides" (None))
AGREEMENT = {
    "latency": ({"loops": 1}, ["latency", "--loops", "1"], {
        "interval_us": ("interval_ns", lambda v: v * 1000),
        "duration_s": ("duration_ns", lambda v: 0 if v is None else round(v * 1e9)),
        "priority": ("priority", lambda v: 0 if v is None else v),
        "policy": ("policy", str),
        "cpus": ("cpus", lambda v: sorted(os.sched_getaffinity(0)) if v is None else v),
        "thresholds_us": ("thresholds_ns", lambda v: [round(t * 1000) for t in v]),
        "window_s": ("window_ns", lambda v: 0 if v is None else round(v * 1e9)),
        "mode": ("mode", str),
        "work_us": ("work_ns", lambda v: 0 if v is None else v * 1000),
        "trace_threshold_us": ("trace_threshold_ns", lambda v: 0 if v is None else v * 1000),
        "trace_breaches": ("trace_breaches", int),
        "trace_history_ms": ("trace_history_ns", lambda v: round(v * 1e6)),
    }, {"loops"}),
    "mem-lat": ({"sizes": [4096]}, ["mem-lat", "--sizes", "4096"], {
        "stride": ("stride_bytes", int), "mode": ("mode", str), "repetitions": ("repetitions", int),
        "hugepages": ("hugepages", str), "seed": ("seed", int), "quick": ("quick", bool),
    }, {"sizes", "cpu"}),
    "mem-bw": ({"sizes": [4096]}, ["mem-bw", "--sizes", "4096"], {
        "operations": ("ops", list), "threads": ("threads", int), "hugepages": ("hugepages", str),
        "quick": ("quick", bool),
    }, {"sizes", "cpus"}),
    "mem-alloc": ({"tests": ["alloc"], "sizes": [8192]}, ["mem-alloc", "--tests", "alloc", "--sizes", "8192"], {
        "methods": ("methods", list), "touch": ("touch", list), "seed": ("seed", int), "quick": ("quick", bool),
    }, {"tests", "sizes", "iterations", "tlb_lines", "repetitions", "cpu"}),
    "work": ({"size": "small"}, ["work", "--size", "small"], {
        "kernels": ("kernels", list), "repetitions": ("repetitions", int), "seed": ("seed", int),
        "expect": ("expect", dict),
    }, {"size", "copies", "rounds", "cpus"}),      # the last three: only `--copies` runs (their own records)
}


@pytest.mark.parametrize("kind", list(AGREEMENT))
def test_host_defaults_are_the_probes(kind, probe):
    given, argv, echoed, not_compared = AGREEMENT[kind]
    model = BENCHMARKS.get(kind).Params
    # Every key of the host model is compared or said not to be: a new key needs a line here.
    assert set(echoed) | not_compared == set(model.model_fields)
    host = model.model_validate(given)
    probe_params = _probe_meta(probe, *argv)
    for key, (probe_key, as_probe) in echoed.items():
        assert as_probe(getattr(host, key)) == probe_params[probe_key], (kind, key)


def test_latency_priority_default_is_the_probes_for_every_policy(probe):
    model = BENCHMARKS.get("latency").Params
    for policy in ("fifo", "rr", "other"):
        host = model.model_validate({"loops": 1, "policy": policy})
        echoed = _probe_meta(probe, "latency", "--loops", "1", "--policy", policy)
        assert (host.priority or 0) == echoed["priority"], policy
