"""Load kinds, one folder each, so that adding a load touches one folder.

A load's folder holds up to two modules, one per stage of the data flow:

  params.py    its campaign keys (a pydantic model) and how to start it; registers itself in
               rtvbench.loads.base.LOADS (loads stage). The probe's generators share their
               common keys and launching in rtvbench.loads.probe_load.
  achieved.py  what it achieved, from its records: the figures it carries, when it achieved
               nothing, and the phrase the report writes beside a result (analysis stage,
               rtvbench.analysis.load_figures)

Each stage's registry asks `load(stage)` for the modules of its own stage only (rtvbench.folders).
"""

from __future__ import annotations

from rtvbench.folders import Folders

STAGES = ("params", "achieved")
_FOLDERS = Folders(__name__, __file__, STAGES)


def load(stage: str, kind: str | None = None) -> None:
    """Import every load's module of one stage (or only `kind`'s, when it has a folder), which
    registers it."""
    _FOLDERS.load(stage, kind)
