"""A farm of ssh boards for the tests of `rtvbench run --jobs`: an sshd per board, each in a network
namespace of its own behind a veth pair (10.201.N.1 here, 10.201.N.2 the board), and a campaign
that waits on every board."""

from __future__ import annotations

import os
import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from helpers.sshd import Sshd, available

BOARDS = (1, 2, 3)


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


def why_not() -> str | None:
    """Why the farm cannot be built here, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed (apt-get install iproute2)"
    in_use = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True).stdout
    if any(f" 10.201.{n}." in in_use for n in BOARDS):
        return "10.201.1-3.0/24 are already in use on this machine"
    return available()


@contextmanager
def farm(root: Path) -> Iterator[list[Sshd]]:
    """The three boards' servers, board N at 10.201.N.2 in namespace rtvbfarmN-<pid>; all removed after.
    Skips the test when why_not() says so."""
    why = why_not()
    if why:
        pytest.skip(why)
    tag = os.getpid() % 100000
    servers: list[Sshd] = []
    spaces: list[str] = []
    try:
        for n in BOARDS:
            ns, here, there = f"rtvbfarm{n}-{tag}", f"rvf{n}h{tag}", f"rvf{n}b{tag}"
            _ip("netns", "add", ns)
            spaces.append(ns)
            _ip("link", "add", here, "type", "veth", "peer", "name", there)
            _ip("link", "set", there, "netns", ns)
            _ip("addr", "add", f"10.201.{n}.1/24", "dev", here)
            _ip("link", "set", here, "up")
            _ip("-n", ns, "addr", "add", f"10.201.{n}.2/24", "dev", there)
            _ip("-n", ns, "link", "set", there, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
            servers.append(Sshd(root / f"board{n}", netns=ns, address=f"10.201.{n}.2").start())
        yield servers
    finally:
        for server in servers:
            server.stop()
        for ns in spaces:
            _ip("netns", "del", ns)         # with the namespace's end of the veth pair, and so the other


def boards_fixture():
    """A module's fixture of the farm: `sshd_boards = boards_fixture()` (its name marks the tests `ssh`)."""
    @pytest.fixture(scope="module")
    def sshd_boards(tmp_path_factory):
        with farm(tmp_path_factory.mktemp("farm")) as servers:
            yield servers
    return sshd_boards


def write_campaign(directory: Path, servers: list[Sshd], name: str, reps: int, wait_s: int,
                   second_login: bool = False) -> None:
    """c.toml: board N is environment bN, reached at its address (the ssh config names it so), and
    measures a command that sleeps wait_s; with second_login also environment b1again, a second
    login of board 1 (the same machine)."""
    envs = []
    for n, server in zip(BOARDS, servers):
        server.write_client_config(directory / f"b{n}.conf", alias=server.address)
        envs.append(f'[environments.b{n}]\ntarget = "ssh"\nhost = "{server.address}"\nssh_config = "b{n}.conf"\n')
    if second_login:
        envs.append(f'[environments.b1again]\ntarget = "ssh"\nhost = "{servers[0].user}@{servers[0].address}"\n'
                    'ssh_config = "b1.conf"\n')
    (directory / "c.toml").write_text(
        f'name = "{name}"\nrepetitions = {reps}\nseed = 3\n' + "\n".join(envs)
        + f'\n[benchmarks.wait]\nkind = "command"\ncommand = "sh -c \'sleep {wait_s}; echo waited {wait_s}\'"\n'
        f'format = "mapping"\nexpected_s = {wait_s}\n[[benchmarks.wait.figures]]\nname = "waited_s"\n'
        'regex = "waited ([0-9]+)"\n')
