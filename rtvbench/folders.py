"""Extension points whose entries are one folder each (benchmark kinds, loads): finding the folders,
and importing one stage's module of every folder, which registers it.

A stage's registry asks for the modules of its own stage only, so the campaign never imports
analysis code and analysis never imports the report. The folders are found on disk rather than
listed: a list would be one more place to edit for a new entry, and the one place outside its
folder where the entry's name would be written. tests/test_import_rules.py follows these imports
as if they were written out.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path


class Folders:
    """The folders of one package (`rtvbench.kinds`, `rtvbench.loads`) and its stages' modules."""

    def __init__(self, package: str, path: str, stages: tuple[str, ...], order: tuple[str, ...] = ()) -> None:
        self.package = package
        self.root = Path(path).parent
        self.stages = stages
        #: when the entries' order shows (the report's sections), the folders in that order
        self.order = order
        self._loaded: set[str] = set()

    def on_disk(self) -> list[str]:
        """The folders, sorted (module names: an entry named with a dash has an underscore here)."""
        return sorted(info.name for info in pkgutil.iter_modules([str(self.root)]) if info.ispkg)

    def names(self) -> list[str]:
        """The folders, in their order when one is given, else sorted."""
        return list(self.order) if self.order else self.on_disk()

    def load(self, stage: str, entry: str | None = None) -> None:
        """Import every folder's module of one stage; a folder may lack a stage. With `entry` (a name
        as a campaign writes it), only that entry's folder when there is one: a command that meets one
        kind then pays for its module alone, and a name no folder has loads them all, so the registry
        can list every name it knows."""
        if stage not in self.stages:
            raise ValueError(f"unknown stage {stage!r}")
        if stage in self._loaded:
            return
        folder = None if entry is None else entry.replace("-", "_")
        if folder is not None and folder.isidentifier() and (self.root / folder / f"{stage}.py").exists():
            importlib.import_module(f"{self.package}.{folder}.{stage}")
            return
        self._loaded.add(stage)
        for folder in self.names():
            if (self.root / folder / f"{stage}.py").exists():
                importlib.import_module(f"{self.package}.{folder}.{stage}")
