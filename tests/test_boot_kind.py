"""The `boot` kind: each repetition power-cycles a qemu guest and times the boot in phases.

Ground truth: every repetition is a new boot (the kernel's boot_id differs each time), the phases add up to the whole boot, each lies inside the time the
measurement took on the host, and the kernel phase (the guest's CLOCK_BOOTTIME when /init started)
agrees with the kernel's own console line before it ran /init (printk's clock) within 50 ms + 5 %."""

from __future__ import annotations

import json
import os

import pytest

from host_helpers import cli_env, run_cli
from rtvbench.store import load_run, open_store
from test_qemu_target import _kernel, _needs_qemu


@pytest.fixture(scope="module")
def booted(probe, tmp_path_factory):
    _needs_qemu("x86_64")
    tmp = tmp_path_factory.mktemp("boot")
    (tmp / "c.toml").write_text(f"""
name = "boots"
repetitions = 5
[environments.guest]
target = "qemu"
arch = "x86_64"
kernel = "{os.path.relpath(_kernel("x86_64"), tmp)}"
[benchmarks.boot]
kind = "boot"
""")
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", "--export-json", "r.json", cwd=tmp,
                env=cli_env(probe), timeout=300)
    assert r.returncode == 0, r.stderr
    return load_run(open_store(f"sqlite:///{tmp}/s.db"), 1), json.loads((tmp / "r.json").read_text())


def test_each_repetition_is_a_fresh_boot_timed_in_phases(booted):
    run, _ = booted
    results = []
    for m in sorted(run.measurements, key=lambda m: m.repetition):
        assert m.status == "ok", m.error
        (r,) = m.results
        results.append(r)
        wall_ns = (m.finished_at - m.started_at).total_seconds() * 1e9
        assert 0 < r["to_kernel_ns"] and 0 < r["kernel_ns"] and 0 < r["init_ns"]
        assert r["to_kernel_ns"] + r["kernel_ns"] + r["init_ns"] == pytest.approx(r["total_ns"], rel=1e-9)
        assert r["total_ns"] < wall_ns, (r, wall_ns)
        assert abs(r["kernel_ns"] - r["console_init_ns"]) < 50e6 + 0.05 * r["kernel_ns"], r
    ids = [r["boot_id"] for r in results]
    assert len(set(ids)) == 5 and all(len(i) == 36 for i in ids), ids


def test_boot_times_reach_the_report_as_average_min_max(booted):
    _, doc = booted
    summaries = {s["figure"]: s for s in doc["summaries"] if s["benchmark"] == "boot"}
    total = summaries["total_ms"]
    assert total["n"] == 5 and total["min"] <= total["mean"] <= total["max"]
    assert {"to_kernel_ms", "kernel_ms", "init_ms"} <= set(summaries)


@pytest.mark.functional
def test_validate_refuses_boot_where_it_cannot_power_cycle(tmp_path, probe):
    (tmp_path / "c.toml").write_text('name = "b"\n[environments.native]\ntarget = "local"\n'
                                     '[benchmarks.boot]\nkind = "boot"\n')
    r = run_cli("validate", "c.toml", cwd=tmp_path, env=cli_env(probe))
    assert r.returncode == 2 and 'environment "native" is a local target, which rtvbench cannot power-cycle' \
        in r.stderr, r.stderr


@pytest.mark.functional
def test_validate_refuses_a_load_inside_the_guest_being_cycled(tmp_path, probe):
    (tmp_path / "vmlinuz").write_bytes(b"\0" * 64)
    (tmp_path / "c.toml").write_text('name = "b"\n[environments.guest]\ntarget = "qemu"\narch = "x86_64"\n'
                                     'kernel = "vmlinuz"\n[loads.hog]\nkind = "cpu"\npercent = 50\n'
                                     '[loads.beside]\nkind = "cpu"\npercent = 50\nwhere = "neighbours"\n'
                                     '[benchmarks.boot]\nkind = "boot"\n')
    r = run_cli("validate", "c.toml", cwd=tmp_path, env=cli_env(probe))
    assert r.returncode == 2, r.stderr
    assert 'loads.hog.where: benchmark "boot" (kind boot) power-cycles the measured guest' in r.stderr
    assert "loads.beside" not in r.stderr, r.stderr
