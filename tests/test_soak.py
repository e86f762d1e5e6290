"""`rtvbench soak`: a campaign's cells measured round after round, every environment's health checked
between measurements, ending with a verdict.

Ground truth: a compressed soak (24 s instead of hours) of a TCG guest whose QEMU this test kills
with SIGKILL midway. The verdict must say that the guest was lost once and brought back once, and
the health series must show another QEMU process after the recovery than before; the soak lasted at
least its duration and kept measuring after the loss. A soak of this machine with nothing happening
is called stable (exit 0); the one with the lost guest needs attention (exit 1)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from host_helpers import cli_env, kill_all, run_cli, start_cli, wait_for
from rtvbench.store import load_run, open_store
from test_qemu_target import _kernel, _needs_qemu

DURATION_S = 24


def _children_running(parent: int, name: str) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_bytes().decode(errors="replace")
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == parent and fields[0] != "Z" and name.encode() in cmdline:
            out.append(int(entry))
    return out


@pytest.fixture(scope="module")
def soaked(probe, tmp_path_factory):
    _needs_qemu("x86_64")
    tmp = tmp_path_factory.mktemp("soak")
    (tmp / "c.toml").write_text(f"""
name = "soak-guest"
[environments.guest]
target = "qemu"
arch = "x86_64"
kernel = "{os.path.relpath(_kernel("x86_64"), tmp)}"
cpus = 1
[benchmarks.wakeup]
kind = "latency"
interval_us = 10000
duration_s = 1
""")
    proc = start_cli("soak", "c.toml", "--duration", f"{DURATION_S}s", "--check-every", "3s", "--store",
                     "sqlite:///s.db", "--export-json", "r.json", cwd=tmp, env=cli_env(probe))
    try:
        # The guest's QEMU, named by its socket directory (a QEMU that only probes for KVM has none).
        wait_for(lambda: _children_running(proc.pid, "rtvb-qemu-"), 120, "the guest's QEMU")
        time.sleep(8)                       # a few rounds and health checks before the loss
        # The QEMU running now, not the first one seen: a guest may have been started again since.
        (qemu,) = _children_running(proc.pid, "rtvb-qemu-")
        os.kill(qemu, signal.SIGKILL)
        killed_at = time.monotonic()
        out, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            kill_all(str(tmp))
    return proc.returncode, out, err, json.loads((tmp / "r.json").read_text()), \
        load_run(open_store(f"sqlite:///{tmp}/s.db"), 1), qemu, killed_at


def test_the_verdict_reports_the_lost_and_recovered_guest(soaked):
    code, out, err, doc, run, qemu, _ = soaked
    assert code == 1, err                          # needs attention
    soak = doc["soak"]
    (guest,) = soak["environments"]
    assert guest["environment"] == "guest" and guest["lost"] == 1 and guest["recovered"] == 1, soak
    assert any("`guest` was lost 1 time and brought back 1 time" in f for f in soak["findings"]), soak
    assert "was lost 1 time and brought back 1 time" in out
    assert soak["hours"] * 3600 >= DURATION_S * 0.95
    assert guest["checks"] >= DURATION_S / 3 * 0.6 and guest["failed_checks"] <= 1, guest


def test_the_health_series_shows_a_new_qemu_after_the_recovery(soaked):
    _, _, _, _, run, qemu, _ = soaked
    events = [c.event for c in run.health if c.event]
    assert events == ["lost", "recovered"]
    lost_at = next(i for i, c in enumerate(run.health) if c.event == "lost")
    before = {g.pid for c in run.health[:lost_at] for g in c.qemu}
    after = {g.pid for c in run.health[lost_at:] for g in c.qemu}
    # The killed QEMU was checked before the loss, never after, and a new one answered after it.
    assert qemu in before and after and qemu not in after, (before, after)
    # It kept measuring after the loss: rounds before and after.
    ok = [m for m in run.measurements if m.status == "ok"]
    lost = [m for m in run.measurements if m.status == "error"]
    assert len(lost) == 1 and any(m.started_at > lost[0].finished_at for m in ok)
    assert all(m.results for m in ok) and len(ok) >= 8


def test_a_quiet_soak_is_stable(probe, tmp_path):
    (tmp_path / "c.toml").write_text('name = "quiet"\n[environments.native]\ntarget = "local"\n'
                                     '[benchmarks.w]\nkind = "latency"\ninterval_us = 1000\nduration_s = 0.3\n')
    r = run_cli("soak", "c.toml", "--duration", "3s", "--check-every", "1s", "--store", "sqlite:///s.db",
                "--export-json", "r.json", cwd=tmp_path, env=cli_env(probe), timeout=60)
    soak = json.loads((tmp_path / "r.json").read_text())["soak"]
    assert r.returncode == 0 and soak["stable"] and soak["findings"] == [], (r.stderr, soak)
    (native,) = soak["environments"]
    assert native["checks"] >= 3 and native["lost"] == 0 and native["failed_checks"] == 0
    assert "stable" in r.stdout


@pytest.mark.functional
def test_a_duration_that_is_not_one_is_refused(probe, tmp_path):
    (tmp_path / "c.toml").write_text('name = "q"\n[environments.native]\ntarget = "local"\n'
                                     '[benchmarks.w]\nkind = "latency"\nduration_s = 1\n')
    r = run_cli("soak", "c.toml", "--duration", "8 hours", cwd=tmp_path, env=cli_env(probe))
    assert r.returncode == 2 and "--duration '8 hours' is not a duration" in r.stderr, r.stderr
