"""Every target module imports on its own, first in a fresh interpreter: the registries import a
target's module when a campaign first names it, so an import cycle between targets (the labgrid
place's serial line and the qemu package's partition, say) would be an internal error at validate
for some campaigns and not others."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import rtvbench.targets

ROOT = Path(__file__).resolve().parent.parent
MODULES = sorted(m.name for m in pkgutil.walk_packages(rtvbench.targets.__path__, "rtvbench.targets."))

pytestmark = pytest.mark.functional


def test_every_target_module_imports_first_and_alone():
    # One interpreter per module, several at once: a cycle shows only when its module is the first.
    procs = {m: subprocess.Popen([sys.executable, "-c", f"import {m}"], cwd=ROOT, stderr=subprocess.PIPE, text=True)
             for m in MODULES}
    failed = {m: p.communicate(timeout=120)[1].strip().splitlines()[-1:] for m, p in procs.items()}
    assert len(MODULES) > 20
    assert {m: err for m, err in failed.items() if procs[m].returncode != 0} == {}
