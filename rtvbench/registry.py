"""A name -> implementation table, one per extension point (benchmark kinds, load
kinds, target kinds).

Later issues add a benchmark, a load generator or a target by writing one module
that registers itself; nothing else changes. Names that are planned but not written
yet are listed so that a campaign using them gets "not supported yet" instead of
"unknown".
"""

from __future__ import annotations

from typing import Callable, Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, what: str, planned: tuple[str, ...] = (),
                 finder: Callable[[str | None], None] | None = None) -> None:
        self.what = what                  # e.g. "benchmark kind", for messages
        self.planned = planned
        #: imports the module that registers one name (or, given None, every name): entries found on
        #: disk are imported when first asked for, so a campaign pays only for the kinds it names
        self.finder = finder
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        def add(item: T) -> T:
            if name in self._items:
                raise ValueError(f"{self.what} {name!r} registered twice")
            self._items[name] = item
            return item
        return add

    def unregister(self, name: str) -> None:
        """Remove an entry (tests that register a stand-in target for one test)."""
        self._items.pop(name, None)

    def get(self, name: str) -> T | None:
        if name not in self._items and self.finder is not None and isinstance(name, str):
            self.finder(name)
            if name not in self._items:
                self.finder(None)         # registered under a name its folder does not spell
        return self._items.get(name)

    def names(self) -> list[str]:
        if self.finder is not None:
            self.finder(None)
        return sorted(self._items)

    def unknown_message(self, name: object) -> str:
        """Why `name` cannot be used, as the tail of a validation message."""
        supported = ", ".join(f'"{n}"' for n in self.names())
        if name in self.planned:
            return f'{self.what} "{name}" is not supported yet (supported: {supported})'
        return f"unknown {self.what} {_show(name)} (supported: {supported})"


def _show(value: object) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)
