"""Shared fixtures: the probe binaries, built once per test session; a throwaway PostgreSQL server."""

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


@pytest.fixture(scope="session")
def postgres_server():
    """One PostgreSQL server for the session (tests/postgres_server.py), stopped at its end whatever
    the tests did."""
    from postgres_server import Server, missing
    why = missing()
    if why:
        pytest.skip(why)
    server = Server()
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_url(postgres_server) -> str:
    """The URL of a new empty database of its own: tests do not see each other's runs."""
    return postgres_server.url(postgres_server.create_database())


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(request, tmp_path) -> str:
    """A store URL on each backend the store supports: an SQLite file, a PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/s.db"
    return request.getfixturevalue("postgres_url")


# What a test needs decides its marker, so `make test-fast` (-m unit) can run the tests that need
# neither a probe binary, a guest, nor an ssh server, without anyone keeping a list by hand.
_MARKERS = {
    "unit": "needs nothing but Python: no probe, guest or ssh server (make test-fast)",
    "probe": "runs the native or a cross-built probe",
    "qemu": "boots a QEMU guest",
    "ssh": "starts an ssh server to measure through",
    "browser": "loads a report in headless Chromium",
    "postgres": "starts a throwaway PostgreSQL server to store into",
    "peer": "times something with a peer tool (hyperfine) and judges what it measured",
}
_NEEDS = {"probe": {"probe", "cross_probes", "ubsan_probe"}}
# Fixtures whose names say what they start (module-level fixtures of the qemu and ssh tests).
_STARTS = (("qemu", ("guest", "qemu", "kernel")), ("ssh", ("ssh", "sshd")), ("postgres", ("postgres",)))


# Unlike the markers above, this one is a judgement about what a test asserts, so its author sets it
# (on the test, or on a module whose tests all qualify): nothing in it depends on time, rates, CPU
# shares or a quiet machine. `make test` runs these two at a time, and every other non-unit test
# alone afterwards.
FUNCTIONAL = ("functional: asserts nothing that depends on time, rates, CPU shares or a quiet machine "
              "(outputs, messages, exit codes, stored contents, checksums, clean-up), so it may run beside "
              "another such test")


def pytest_configure(config) -> None:
    # A shell starts a background job with SIGINT ignored, and an ignored signal stays ignored
    # through exec: every CLI a test starts would then ignore the SIGINT the test sends it. Python
    # installs its Ctrl-C handling only where SIGINT was not ignored, so restore it here: the
    # processes the tests start inherit the default disposition (a handler is reset by exec).
    import signal
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    for name, text in _MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    config.addinivalue_line("markers", FUNCTIONAL)


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


# tests/phases.py (what `make test` runs) reads every test's outcome from the file this names, to
# count each phase and to run a failed measuring test once more. Only the process that reports
# writes: under xdist that is the controller, which receives its workers' reports.
_OUTCOMES = os.environ.get("RTVBENCH_TEST_OUTCOMES")


def pytest_runtest_logreport(report) -> None:
    if not _OUTCOMES or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    import json
    with open(_OUTCOMES, "a") as out:
        out.write(json.dumps({"nodeid": report.nodeid, "when": report.when, "outcome": report.outcome}) + "\n")
