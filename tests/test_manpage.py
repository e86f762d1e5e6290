"""rtvbench(1): written from the Click commands, it names every command and every option they have
(walked here from Click's objects, not from the page's own list, so that a new option the page
missed fails), groff and man render it without a warning, and the wheel installs it where
`man rtvbench` finds it."""

from __future__ import annotations

import importlib.util
import os
import platform
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import click
import pytest

from host_helpers import install_wheel
from rtvbench.cli import cli
from rtvbench.manpage import render

pytestmark = pytest.mark.functional

REPO = Path(__file__).resolve().parent.parent
NATIVE = {"x86_64": "x86_64", "aarch64": "aarch64", "armv7l": "armhf", "riscv64": "riscv64"}.get(platform.machine())


def _commands(group: click.Group, ctx: click.Context, prefix: str):
    """(words of the command line, command) of every command under `group`, groups included."""
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        sub = command.make_context(name, [], parent=ctx, resilient_parsing=True)
        yield f"{prefix} {name}", command, sub
        if isinstance(command, click.Group):
            yield from _commands(command, sub, f"{prefix} {name}")


def _rendered(page: Path, *how: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, MANWIDTH="200", LANG="C.UTF-8")
    return subprocess.run(list(how) + [str(page)], capture_output=True, text=True, env=env, timeout=60)


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("man") / "rtvbench.1"
    path.write_text(render(cli, "9.8.7"), encoding="utf-8")
    return path


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed (scripts/setup.sh installs it)")
def test_the_page_renders_without_a_warning_and_names_every_command_and_option(page):
    checked = _rendered(page, "groff", "-man", "-ww", "-z", "-Tutf8")
    assert checked.returncode == 0 and checked.stderr == "", checked.stderr
    text = _rendered(page, "groff", "-man", "-Tutf8", "-P-cbou", "-rLL=200n").stdout
    # roff may break a long usage line, never a word: compare words, in order, over the whole text.
    words = " ".join(text.split())
    assert "rtvbench 9.8.7" in words and "EXIT STATUS" in words
    root = cli.make_context("rtvbench", [], resilient_parsing=True)
    found = 0
    for line, command, ctx in _commands(cli, root, "rtvbench"):
        usage = " ".join([line, *command.collect_usage_pieces(ctx)])
        assert usage in words, usage
        for param in command.get_params(ctx):
            if isinstance(param, click.Option) and not param.hidden:
                for opt in param.opts + param.secondary_opts:
                    assert opt in words, f"{line} {opt}"
                    found += 1
    for param in cli.get_params(root):
        for opt in param.opts:
            assert opt in words, opt
    assert "-h, --help" in words
    assert found > 50, found           # the walk saw the commands' options, not an empty group


@pytest.mark.skipif(shutil.which("man") is None, reason="man is not installed (scripts/setup.sh installs man-db)")
def test_man_renders_the_page_without_a_warning(page):
    shown = _rendered(page, "man", "--warnings", "-l", "-P", "cat")
    assert shown.returncode == 0 and shown.stderr == "", shown.stderr
    assert "rtvbench - measure real-time and virtualization behaviour" in shown.stdout


def test_setup_py_installs_the_page_it_builds_as_a_data_file(monkeypatch):
    spec = importlib.util.spec_from_file_location("rtvbench_setup", REPO / "setup.py")
    setup_py = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(setup_py)        # not as __main__: setup() does not run
    assert setup_py.DATA_FILES == [("share/man/man1", [setup_py.MAN_PAGE])]
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    built = setup_py.build_man_page("9.8.7")
    assert built == REPO / setup_py.MAN_PAGE
    assert built.read_text(encoding="utf-8") == render(cli, "9.8.7")


@pytest.mark.probe
@pytest.mark.skipif(NATIVE is None, reason=f"no probe build for {platform.machine()}")
def test_the_wheel_carries_the_page_where_man_finds_it_once_installed(tmp_path):
    """Built with this machine's probe only (RTVBENCH_WHEEL_PROBES), to stay quick: the page does
    not depend on which probes the wheel carries (tests/test_wheel.py builds them all)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RTVBENCH_")}
    env["RTVBENCH_WHEEL_PROBES"] = NATIVE
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "dist"),
                            str(REPO)], env=env, capture_output=True, text=True, timeout=240)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    [wheel] = (tmp_path / "dist").glob("rtvbench-*.whl")
    release = wheel.name.split("-")[1]
    with zipfile.ZipFile(wheel) as zf:
        page = zf.read(f"rtvbench-{release}.data/data/share/man/man1/rtvbench.1").decode()
    assert page.startswith('.TH RTVBENCH 1 "') and f'"rtvbench {release}"' in page.splitlines()[0]

    venv = tmp_path / "venv"
    install_wheel(wheel, venv, env)
    assert (venv / "share" / "man" / "man1" / "rtvbench.1").read_text(encoding="utf-8") == page
    if shutil.which("man"):
        # man looks beside each PATH directory's bin for share/man, as for any installed command.
        bare = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
        where = subprocess.run(["man", "-w", "rtvbench"], env=bare, capture_output=True, text=True, timeout=60)
        assert where.stdout.strip() == str(venv / "share" / "man" / "man1" / "rtvbench.1"), where.stderr
