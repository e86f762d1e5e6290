"""setup.py's checks before it builds the wheel's probes: which architectures, and a build machine
without a compiler or its static libc told in one sentence what to install. Nothing is compiled:
the compilers here are stand-ins."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def setup_py(monkeypatch):
    spec = importlib.util.spec_from_file_location("rtvbench_setup", REPO / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)         # not as __main__: setup() does not run
    monkeypatch.delenv(module.ONLY, raising=False)
    monkeypatch.delenv("CC", raising=False)
    return module


@pytest.fixture
def bin_dir(tmp_path, monkeypatch):
    """The only directory on PATH: make, and the compilers a test puts there."""
    path = tmp_path / "bin"
    path.mkdir()
    (path / "make").symlink_to(shutil.which("make") or "/usr/bin/make")
    monkeypatch.setenv("PATH", str(path))
    return path


def _compiler(bin_dir: Path, name: str, libc: str) -> None:
    """A stand-in that answers `-print-file-name=libc.a` as gcc does: the bare name when missing."""
    (bin_dir / name).write_text(f"#!/bin/sh\necho {libc}\n")
    (bin_dir / name).chmod(0o755)


def _failure(setup_py, arches) -> str:
    with pytest.raises(SystemExit) as e:
        setup_py.build_probes(arches)
    message = str(e.value)
    assert message.endswith(".") and ". " not in message, f"not one sentence: {message}"
    return message


def test_every_missing_compiler_is_named_with_its_packages(setup_py, bin_dir):
    message = _failure(setup_py, list(setup_py.CROSS))
    for arch in setup_py.CROSS:
        compiler, packages = (("cc", "build-essential") if arch == setup_py.NATIVE
                              else setup_py.CROSS[arch])
        assert f"{compiler} with its static libc for the {arch} probe (apt-get install {packages})" \
            in message
    assert f"or set {setup_py.ONLY} to the architectures to build" in message


def test_only_what_is_missing_is_named(setup_py, bin_dir):
    for arch in setup_py.CROSS:
        _compiler(bin_dir, setup_py._how(arch)[1], "/usr/lib/libc.a")
    # riscv64's compiler is there, but not its static libc.
    _compiler(bin_dir, setup_py.CROSS["riscv64"][0], "libc.a")
    message = _failure(setup_py, list(setup_py.CROSS))
    assert "for the riscv64 probe (apt-get install gcc-riscv64-linux-gnu libc6-dev-riscv64-cross)" in message
    assert [arch for arch in setup_py.CROSS if f"the {arch} probe" in message] == ["riscv64"]


def test_no_make_is_said_first(setup_py, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert _failure(setup_py, ["aarch64"]) == "building the rtvbench wheel needs make (apt-get install make)."


def test_the_architectures_to_build_can_be_chosen(setup_py, monkeypatch, tmp_path):
    assert setup_py._arches() == ["x86_64", "aarch64", "armhf", "riscv64"]
    monkeypatch.setenv(setup_py.ONLY, "aarch64, riscv64")
    assert setup_py._arches() == ["aarch64", "riscv64"]
    monkeypatch.setenv(setup_py.ONLY, "x86_64,arm64,mips")
    with pytest.raises(SystemExit, match=r"names no probe build arm64, mips; the builds are x86_64, "
                                         r"aarch64, armhf, riscv64\."):
        setup_py._arches()
    # None at all: a wheel without probes, built without make or a compiler.
    monkeypatch.setenv(setup_py.ONLY, "")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert setup_py.build_probes(setup_py._arches()) == {}
