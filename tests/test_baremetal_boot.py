"""The `boot` kind in a bare-metal partition, both images: each repetition boots the image from a fresh
QEMU, timed from QEMU's start to the image's `ready`, whose counter (running since the emulated machine's
reset, which comes after QEMU's start) can never exceed the host's time; the probe's sysinfo answers
after it, and is the environment's fingerprint; the report shows the phases as a guest's."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from host_helpers import cli_env, json_report, run_cli
from rtvbench.store import load_run, open_store

REPO = Path(__file__).resolve().parent.parent

pytestmark = [pytest.mark.qemu, pytest.mark.functional]

CAMPAIGN = """
name = "partition-boot"
repetitions = 2
seed = 1

[environments.a]
target = "qemu"
arch = "aarch64"
image = "bare-metal"

[environments.r]
target = "qemu"
arch = "riscv64"
image = "bare-metal"

[loads.idle]

[benchmarks.boot]
kind = "boot"
"""


@pytest.mark.timeout(600)           # a hang guard: four boots of the image under TCG
def test_each_repetition_boots_the_image_afresh_and_its_counter_is_within_the_hosts_time(tmp_path):
    for tool in ("qemu-system-aarch64", "qemu-system-riscv64", "aarch64-linux-gnu-gcc", "riscv64-linux-gnu-gcc"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed (scripts/setup.sh installs it)")
    subprocess.run(["make", "-s", "-C", str(REPO), "baremetal"], check=True)
    (tmp_path / "c.toml").write_text(CAMPAIGN)
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=cli_env(), timeout=540)
    assert r.returncode == 0, r.stderr
    assert "4 of 4 measurements ok" in r.stdout
    run = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), 1)
    assert sorted(m.environment for m in run.measurements) == ["a", "a", "r", "r"]
    for m in run.measurements:
        assert m.status == "ok" and m.command == ["rtvb-probe", "sysinfo"], m.error
        [result] = m.results
        assert result["total_ns"] > 0 and result["start_ns"] > 0
        # The counter started after QEMU did: what it says of the boot is within what the host measured.
        assert result["start_ns"] <= result["total_ns"]
        assert result["to_counter_ns"] == pytest.approx(result["total_ns"] - result["start_ns"])
    # Each environment's fingerprint is its image's own sysinfo record.
    for env, arch, counter_from in (("a", "aarch64", "cntfrq"), ("r", "riscv64", "fdt")):
        fingerprint = run.fingerprints[env]
        assert (fingerprint["machine"], fingerprint["counter_hz_from"], fingerprint["mem_area_bytes"]) == \
            (arch, counter_from, 96 << 20), fingerprint
    figures = {(s["environment"], s["figure"]) for s in json_report(tmp_path)["summaries"]
               if s["benchmark"] == "boot"}
    assert figures >= {(env, f) for env in ("a", "r") for f in ("total", "to_counter", "start")}, figures
