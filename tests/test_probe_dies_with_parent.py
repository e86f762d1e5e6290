"""The probe asks the kernel to kill it when the process RTVB_DIE_WITH names ends (the local target
starts it so, instead of a preexec_fn): a parent that is already gone when it asks is caught, and a
command that is not the probe still gets the preexec_fn, a missing one reported as before. That the
probe dies with a killed runner is held by test_interrupt_resume.py."""

from __future__ import annotations

import os
import subprocess

import pytest

from rtvbench.targets.local import LocalTarget, _dying_with_us

pytestmark = pytest.mark.functional


def test_a_probe_whose_parent_is_not_the_named_process_kills_itself(probe):
    # Our pid is not the parent of the probe `sh` starts: as if the runner ended before the prctl.
    done = subprocess.run(["sh", "-c", f"{probe} --version; echo after"], capture_output=True, text=True,
                          env={**os.environ, "RTVB_DIE_WITH": str(os.getpid())}, timeout=60)
    assert done.stdout == "after\n"                 # killed before printing its version


def test_a_probe_started_by_the_named_process_runs(probe):
    done = subprocess.run([str(probe), "--version"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "RTVB_DIE_WITH": str(os.getpid())})
    assert done.returncode == 0 and done.stdout.startswith("rtvb-probe ")


def test_the_local_target_starts_the_probe_with_the_variable_and_others_with_preexec_fn(probe):
    target = LocalTarget("native", None)
    path = target.deploy_probe()
    assert _dying_with_us([path, "latency"], path)["env"]["RTVB_DIE_WITH"] == str(os.getpid())
    assert "preexec_fn" in _dying_with_us(["sleep", "1"], path)
    lines: list[str] = []
    done = target.run([path, "--version"], lines.append)
    assert done.returncode == 0 and lines[0].startswith("rtvb-probe ")
    missing = target.run(["/nonexistent/tool"], lines.append)
    assert missing.returncode == 127 and "cannot start /nonexistent/tool" in missing.stderr
