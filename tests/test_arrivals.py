"""A command's output lines reach the store as they arrive: the lines of one read of the pipe in one
transaction, each read's before the next read, and what was read before a bad line is kept."""

from __future__ import annotations

import os

import pytest

from rtvbench.runner.arrivals import ArrivingLines
from rtvbench.targets.base import Deadline, Watch, watched_drain


def _drain_pipe(first: bytes, batches: list[list[str]], after_first_commit: bytes = b"") -> None:
    """Drain a pipe holding `first` into `batches` (the lines of each transaction). What follows is
    written, and the pipe closed, only once the first transaction is in: it can only come in a
    later read."""
    r, w = os.pipe()
    os.write(w, first)
    open_w = [w]

    def store(numbered) -> None:
        batches.append([record["line"] for _, record in numbered])
        if open_w:
            os.write(w, after_first_commit)
            os.close(open_w.pop())

    def handle(line: str) -> None:
        if line == "bad":
            raise ValueError("a line the stream refuses")
        sink.keep(len(batches) + 1, {"line": line})

    sink = ArrivingLines(handle, store)
    try:
        with os.fdopen(r, "rb") as stream:
            watched_drain(stream, sink, Watch(Deadline(60), lambda: None, lambda: None))()
    finally:
        if open_w:
            os.close(open_w.pop())


def test_lines_of_one_read_go_in_one_transaction_and_each_read_before_the_next():
    batches: list[list[str]] = []
    _drain_pipe(b"meta\nresult\nend\n", batches, after_first_commit=b"late\n")
    assert batches == [["meta", "result", "end"], ["late"]]


def test_a_bad_line_keeps_what_was_read_before_it():
    batches: list[list[str]] = []
    with pytest.raises(ValueError):
        _drain_pipe(b"meta\nresult\nbad\nend\n", batches)
    assert batches == [["meta", "result"]]


def test_lines_handed_on_one_by_one_are_committed_one_by_one():
    # A target that does not say which lines came together (the boot kind, a guest's agent).
    stored: list[list[int]] = []
    sink = ArrivingLines(lambda line: sink.keep(int(line), {}),
                         lambda numbered: stored.append([seq for seq, _ in numbered]))
    for line in ("1", "2", "3"):
        sink(line)
    assert stored == [[1], [2], [3]]
