"""What the guests of a qemu environment cost the host, seen from the host (QEMU's threads in /proc).

Ground truth: in a two-guest environment, the neighbour guest runs a cpu load at 100 % on its one
vCPU while the first guest only wakes 10 times a second. Under TCG a vCPU thread emulates its vCPU
and sleeps when the vCPU halts, so the neighbour's vCPU thread must want one host CPU all the time:
running or waiting for a CPU (schedstat) over 90 % of the measurement, running itself over 90 % when
this machine is otherwise idle (and at least half of it on this 2-CPU machine however busy); the idle
guest's thread under 10 %; without the load both under 10 %. The rest of QEMU (device
emulation, I/O) is a small share either way, and each QEMU maps at least the guest's kernel and its own
code (RSS well above 20 MiB), PSS never above RSS.

Each guest's memory as its own kernel counts it (its /proc/meminfo, read through its agent at the same
moments) is beside QEMU's. Ground truth: a `mem` load writing over a 64 MiB buffer of its own runs in one
guest at a time: the guest that holds it uses about 64 MiB more than in the idle measurement (its pages
written, so resident; the load's own program adds a little), the other guest about the same as idle,
and used plus available never exceeds what the guest was given."""

from __future__ import annotations

import csv
import io
import json
import os

import pytest

from host_helpers import cli_env, run_cli
from rtvbench.run_analyses.host_usage.analysis import measurement_host_usage
from rtvbench.store import load_run, open_store
from test_qemu_target import _kernel, _needs_qemu

BUFFER_MIB = 64
MEMORY_MB = 256


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
memory_mb = {MEMORY_MB}
[loads.idle]
[loads.hog]
kind = "cpu"
percent = 100
workers = 1
where = "neighbours"
[loads.here]
kind = "mem"
op = "write"
buffer_size = "{BUFFER_MIB}M"
workers = 1
[loads.beside]
kind = "mem"
op = "write"
buffer_size = "{BUFFER_MIB}M"
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


@pytest.mark.functional
def test_a_memory_load_raises_the_used_memory_of_its_own_guest_only(run):
    stored, _, _ = run
    idle, here, beside = _usage(stored, "idle"), _usage(stored, "here"), _usage(stored, "beside")
    for usage in (idle, here, beside):
        assert set(usage) == {1, 2}
        for u in usage.values():
            assert u.guest_used_mib > 0 and u.guest_available_mib > 0, u
            assert u.guest_used_mib + u.guest_available_mib <= MEMORY_MB, u
    for loaded, other, cell in ((1, 2, here), (2, 1, beside)):
        rise = cell[loaded].guest_used_mib - idle[loaded].guest_used_mib
        assert 0.9 * BUFFER_MIB <= rise <= BUFFER_MIB + 16, (loaded, rise, idle, cell)
        assert abs(cell[other].guest_used_mib - idle[other].guest_used_mib) < 16, (other, idle, cell)
        # The host sees the written pages in that guest's QEMU too.
        assert cell[loaded].rss_mib >= idle[loaded].rss_mib + 0.9 * BUFFER_MIB or \
            cell[loaded].rss_mib >= BUFFER_MIB, (idle, cell)


@pytest.mark.functional
def test_the_guests_memory_reaches_every_format(run):
    stored, doc, tmp = run
    (m,) = [m for m in doc["measurements"] if m["load"] == "beside"]
    by_guest = {u["guest"]: u for u in m["host_usage"]}
    assert by_guest[2]["guest_used_mib"] > by_guest[1]["guest_used_mib"] + 0.5 * BUFFER_MIB, by_guest
    assert by_guest[2]["guest_available_mib"] > 0
    r = run_cli("report", "--format", "csv", "-o", "-", "--store", "sqlite:///s.db", cwd=tmp, env=cli_env())
    assert r.returncode == 0, r.stderr
    rows = {(row["load"], row["figure"]): float(row["value"]) for row in csv.DictReader(io.StringIO(r.stdout))}
    assert rows[("beside", "host_usage.guest2.guest_used_mib")] == pytest.approx(by_guest[2]["guest_used_mib"])
    assert ("beside", "host_usage.guest1.rss_mib") in rows
    r = run_cli("report", "--format", "md", "-o", "-", "--store", "sqlite:///s.db", cwd=tmp, env=cli_env())
    assert r.returncode == 0, r.stderr
    table = r.stdout.split("what the guests cost the host", 1)[1].split("\n\n", 2)[1]
    assert "Used in guest MiB" in table and "Available in guest MiB" in table, table
    line = [x for x in table.splitlines() if x.startswith("| vms | beside | 2 |")][0]
    assert f"| {by_guest[2]['guest_used_mib']:.0f} | {by_guest[2]['guest_available_mib']:.0f} |" in line, line
