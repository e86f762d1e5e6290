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


# What a test needs decides its marker, so `make test-fast` (-m unit) can run the tests that need
# neither a probe binary, a guest, nor an ssh server, without anyone keeping a list by hand.
_MARKERS = {
    "unit": "needs nothing but Python: no probe, guest or ssh server (make test-fast)",
    "probe": "runs the native or a cross-built probe",
    "qemu": "boots a QEMU guest",
    "ssh": "starts an ssh server to measure through",
    "browser": "loads a report in headless Chromium",
}
_NEEDS = {"probe": {"probe", "cross_probes", "ubsan_probe"}}
# Fixtures whose names say what they start (module-level fixtures of the qemu and ssh tests).
_STARTS = (("qemu", ("guest", "qemu", "kernel")), ("ssh", ("ssh", "sshd")))


def pytest_configure(config) -> None:
    for name, text in _MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        kinds = set()
        for kind, words in _STARTS:
            if any(word in f for f in fixtures for word in words):
                kinds.add(kind)
        kinds |= {m.name for m in item.iter_markers() if m.name in _MARKERS}   # a module's pytestmark
        if fixtures & _NEEDS["probe"] or kinds & {"qemu", "ssh"}:
            kinds.add("probe")
        for kind in kinds or {"unit"}:
            item.add_marker(getattr(pytest.mark, kind))
