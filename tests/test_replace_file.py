"""Output files are replaced whole, but a device or FIFO given as the output is written into."""

import os
import stat
import threading

import pytest

from rtvbench import file_modes

pytestmark = pytest.mark.functional


def test_a_regular_file_is_replaced_whole_with_its_mode(tmp_path):
    path = tmp_path / "report.html"
    path.write_bytes(b"old")
    path.chmod(0o640)
    file_modes.replace_file(path, b"new contents")
    assert path.read_bytes() == b"new contents"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_a_fifo_stays_a_fifo_and_its_reader_gets_the_data(tmp_path):
    # The case of `-o /dev/null` as root, without touching the machine's /dev/null: renaming a
    # file over the output would turn the FIFO into a regular file.
    path = tmp_path / "out"
    os.mkfifo(path)
    got = []
    reader = threading.Thread(target=lambda: got.append(path.read_bytes()), daemon=True)
    reader.start()
    file_modes.replace_file(path, b"figures\n")
    reader.join(timeout=30)
    assert got == [b"figures\n"]
    assert stat.S_ISFIFO(path.stat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
