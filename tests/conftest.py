"""Shared fixtures: the probe binaries, built once per test session."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _make(target: str) -> None:
    subprocess.run(["make", "-s", "-C", str(REPO), target], check=True)


@pytest.fixture(scope="session")
def probe() -> Path:
    """Path of the native rtvb-probe, rebuilt if its sources changed."""
    _make("probe")
    path = REPO / "build" / "probe" / "rtvb-probe"
    assert os.access(path, os.X_OK)
    return path


@pytest.fixture(scope="session")
def cross_probes() -> dict[str, Path]:
    """Static probes for the cross architectures, keyed by arch name."""
    _make("probe-cross")
    return {a: REPO / "build" / "probe" / a / "rtvb-probe" for a in ("aarch64", "armhf", "riscv64")}
