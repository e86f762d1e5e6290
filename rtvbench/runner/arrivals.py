"""A measurement's output lines into the store as they arrive.

Every line's records are committed before the next read of the output, so a crash or hang of the
target or of the runner loses nothing already printed. The lines a target's drain hands on from one
read (targets.base.arrived_together) arrived at the same moment: they go in one transaction, one
wait for the disk instead of one per line. The caller's store decides what committing means: the
runner holds the read with the probe's `end` record for the measurement's end (runner/run.py).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator

Numbered = tuple[int, dict[str, Any]]


class ArrivingLines:
    """The on_line a target gets: `handle(line)` takes each line and hands the records to store to
    keep(); store(records) commits them."""

    def __init__(self, handle: Callable[[str], None], store: Callable[[list[Numbered]], None]) -> None:
        self._handle, self._store = handle, store
        self._kept: list[Numbered] = []
        self._one_read = False

    def keep(self, seq: int, record: dict[str, Any]) -> None:
        self._kept.append((seq, record))

    def __call__(self, line: str) -> None:
        try:
            self._handle(line)
        finally:
            if not self._one_read:
                self._commit()

    @contextmanager
    def together(self) -> Iterator[None]:
        """Lines of one read; what they kept is committed at the end, also when one of them fails."""
        self._one_read = True
        try:
            yield
        finally:
            self._one_read = False
            self._commit()

    def _commit(self) -> None:
        if self._kept:
            kept, self._kept = self._kept, []
            self._store(kept)
