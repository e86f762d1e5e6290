"""The ssh target's bounds against a real OpenSSH server on 127.0.0.1 (tests/helpers/sshd.py): a
command past its Deadline is stopped with its process group through the remote wrapper, and a file is
read there only when it is a small regular file. The "remote" machine is this one, so what runs
there can be checked in /proc; the bounds are hang guards far below the minute a command would run."""

from __future__ import annotations

import uuid

import pytest

from helpers.sshd import ALIAS, Sshd
from host_helpers import check_reads_only_small_regular_files, kill_all, processes_with, wait_for
from rtvbench.targets.base import Deadline
from rtvbench.targets.ssh import SshParams, SshTarget

pytestmark = pytest.mark.functional


def _marker() -> str:
    """A sleep duration no other process on the machine uses: `sleep 60.<random>`."""
    return f"60.{uuid.uuid4().int % 10**9:09d}"


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    server = Sshd(tmp_path_factory.mktemp("sshd")).start()
    yield server
    server.stop()


@pytest.fixture
def board(sshd):
    target = SshTarget("board", SshParams.model_validate({"host": ALIAS, "ssh_config": "ssh_config"},
                                                         context={"base_dir": sshd.root}))
    yield target
    target.close()


@pytest.mark.parametrize("script, overdue", [
    # Prints its last line, then ignores SIGTERM: the deadline's SIGKILL ends it.
    ("trap '' TERM; echo end; sleep {marker}", True),
    # Ends at once, but what it started would keep its stdout open: the wrapper ends its group then.
    ("sleep {marker} & echo end", False),
])
def test_ssh_commands_are_stopped_with_their_group(board: SshTarget, script, overdue):
    marker = _marker()
    lines: list[str] = []
    try:
        done = board.run(["sh", "-c", script.format(marker=marker)], lines.append, Deadline(1.0))
        # What the wrapper killed may take a moment to be gone (a hang guard, not a time limit).
        wait_for(lambda: processes_with(f"sleep {marker}") == [], 30, "the remote command's group to end")
    finally:
        kill_all(f"sleep {marker}")
    assert lines == ["end"]
    assert (done.overdue, done.killed, done.returncode) == ((True, True, 137) if overdue else (False, False, 0)), done


def test_a_file_is_read_from_an_ssh_target_only_when_it_is_a_small_regular_file(board: SshTarget, tmp_path):
    check_reads_only_small_regular_files(board, tmp_path)
