"""Where the host finds its probes: an explicit path, the checkout's build, the installed package's
(a wheel's rtvbench/probes/<arch>/), PATH, in that order, and an error that names the fixes."""

from __future__ import annotations

import platform

import pytest

from rtvbench.probe import binary as probe
from rtvbench.errors import TargetError

NATIVE = probe.ARCH_BUILDS[platform.machine()]
CROSS = next(b for b in probe.CROSS_BUILDS if b != NATIVE)


def _exe(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def places(tmp_path, monkeypatch):
    """Every place a probe may be, all empty: no RTVBENCH_PROBE*, nothing on PATH."""
    monkeypatch.delenv("RTVBENCH_PROBE", raising=False)
    monkeypatch.delenv(f"RTVBENCH_PROBE_{CROSS.upper()}", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setattr(probe, "_BUILT", tmp_path / "checkout" / "rtvb-probe")
    monkeypatch.setattr(probe, "BUILD_DIR", tmp_path / "checkout")
    monkeypatch.setattr(probe, "PACKAGED", tmp_path / "package")
    return tmp_path


def test_the_native_probe_is_looked_for_in_order(places, monkeypatch):
    with pytest.raises(TargetError) as e:
        probe.locate_probe()
    for fix in ("`make probe` in a source checkout", f"wheel that carries the {platform.machine()} probe",
                "set RTVBENCH_PROBE"):
        assert fix in str(e.value)
    on_path = _exe(places / "bin" / "rtvb-probe")
    assert probe.locate_probe() == on_path
    # Another architecture's packaged probe is no probe for this machine.
    _exe(places / "package" / CROSS / "rtvb-probe")
    assert probe.locate_probe() == on_path
    packaged = _exe(places / "package" / NATIVE / "rtvb-probe")
    assert probe.locate_probe() == packaged
    built = _exe(places / "checkout" / "rtvb-probe")
    assert probe.locate_probe() == built
    explicit = _exe(places / "mine")
    monkeypatch.setenv("RTVBENCH_PROBE", str(explicit))
    assert probe.locate_probe() == explicit


def test_a_packaged_probe_that_cannot_run_is_passed_over(places):
    (places / "package" / NATIVE).mkdir(parents=True)
    (places / "package" / NATIVE / "rtvb-probe").write_text("not executable")
    with pytest.raises(TargetError, match="rtvb-probe not found"):
        probe.locate_probe()


def test_a_cross_probe_is_looked_for_in_order(places, monkeypatch):
    with pytest.raises(TargetError) as e:
        probe.probe_for_arch(CROSS)
    assert f"nor one installed with rtvbench at {places / 'package' / CROSS}" in str(e.value)
    assert f"run `make probe-cross` in a source checkout to build it, or set RTVBENCH_PROBE_{CROSS.upper()}" \
        in str(e.value)
    packaged = _exe(places / "package" / CROSS / "rtvb-probe")
    assert probe.probe_for_arch(CROSS) == packaged
    built = _exe(places / "checkout" / CROSS / "rtvb-probe")
    assert probe.probe_for_arch(CROSS) == built
    explicit = _exe(places / "mine")
    monkeypatch.setenv(f"RTVBENCH_PROBE_{CROSS.upper()}", str(explicit))
    assert probe.probe_for_arch(CROSS) == explicit
    # The target's own architecture is this machine's: the native probe's places.
    native = _exe(places / "package" / NATIVE / "rtvb-probe")
    assert probe.probe_for_arch(platform.machine()) == native
