"""What the guests of a qemu environment cost the host, seen from the host (QEMU's threads in /proc).

Ground truth: in a two-guest environment, the neighbour guest runs a cpu load at 100 % on its one
vCPU while the first guest only wakes 10 times a second. Under TCG a vCPU thread emulates its vCPU
and sleeps when the vCPU halts, so the neighbour's vCPU thread must want one host CPU all the time:
running or waiting for a CPU (schedstat) over 90 % of the measurement, running itself over 90 % when
this machine is otherwise idle (and at least half of it on this 2-CPU machine however busy); the idle
guest's thread under 10 %; without the load both under 10 %. The rest of QEMU (device
emulation, I/O) is a small share either way, and each QEMU maps at least the guest's kernel and its own
code (RSS well above 20 MiB), PSS never above RSS."""

from __future__ import annotations

import json
import os

import pytest

from host_helpers import cli_env, run_cli
from rtvbench.run_analyses.host_usage.analysis import measurement_host_usage
from rtvbench.store import load_run, open_store
from test_qemu_target import _kernel, _needs_qemu


@pytest.fixture(scope="module")
def run(probe, tmp_path_factory):
    _needs_qemu("x86_64")
    tmp = tmp_path_factory.mktemp("hostusage")
    kernel = _kernel("x86_64")
    (tmp / "c.toml").write_text(f"""
name = "host-usage"
repetitions = 1
[environments.vms]
target = "qemu"
arch = "x86_64"
kernel = "{os.path.relpath(kernel, tmp)}"
cpus = 1
count = 2
[loads.idle]
[loads.hog]
kind = "cpu"
percent = 100
workers = 1
where = "neighbours"
[benchmarks.wakeup]
kind = "latency"
interval_us = 100000
duration_s = 3
""")
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", "--export-json", "r.json", cwd=tmp,
                env=cli_env(probe), timeout=300)
    assert r.returncode == 0, r.stderr
    return load_run(open_store(f"sqlite:///{tmp}/s.db"), 1), json.loads((tmp / "r.json").read_text()), tmp


def _usage(run, load: str):
    (m,) = [m for m in run.measurements if m.load == load]
    assert m.status == "ok", m.error
    return {u.guest: u for u in measurement_host_usage(m)}


def test_a_busy_guest_takes_a_host_cpu_in_its_vcpu_thread_an_idle_one_does_not(run):
    stored, _, _ = run
    idle, hog = _usage(stored, "idle"), _usage(stored, "hog")
    assert set(idle) == set(hog) == {1, 2}
    assert hog[2].vcpu_percent + hog[2].vcpu_wait_percent > 90, hog
    assert hog[2].vcpu_percent > 45, hog
    assert hog[1].vcpu_percent < 10 and idle[1].vcpu_percent < 10 and idle[2].vcpu_percent < 10, (idle, hog)
    assert all(u.vcpu_percent + u.vcpu_wait_percent < 10 for u in (hog[1], idle[1], idle[2])), (idle, hog)
    for u in (*idle.values(), *hog.values()):
        assert u.other_percent < 25, u
        assert u.rss_mib > 20 and 0 < u.pss_mib <= u.rss_mib, u


def test_the_host_cost_reaches_the_report_and_the_json(run):
    stored, doc, tmp = run
    (m,) = [m for m in doc["measurements"] if m["load"] == "hog"]
    assert [u["guest"] for u in m["host_usage"]] == [1, 2] and m["host_usage"][1]["vcpu_percent"] > 45
    r = run_cli("report", "--format", "md", "-o", "-", "--store", "sqlite:///s.db", cwd=tmp, env=cli_env())
    assert r.returncode == 0, r.stderr
    table = r.stdout.split("what the guests cost the host", 1)[1].split("\n\n", 2)[1]
    hog_total = [line for line in table.splitlines() if line.startswith("| vms | hog | all |")]
    assert hog_total and "vs vms" not in hog_total[0] and "reference" in hog_total[0], table
