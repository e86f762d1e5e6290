"""Benchmark kinds, one folder each, so that adding a kind touches one folder.

A kind's folder holds up to three modules, one per stage of the data flow:

  params.py   its campaign keys (a pydantic model) and the probe command they make;
              registers itself in rtvbench.benchmarks.BENCHMARKS (campaign stage)
  decode.py   its probe records as a typed result: figures with unit and direction,
              distribution, time series, per-CPU figures (rtvbench.analysis.kind)
  section.py  its report section: tables, plots, JSON (rtvbench.report.section)

Beside them, leaves every stage of the kind may read: names.py (its figure names), keys.py (its
campaign keys as a model, where its analysis or report reads its parameters: of() types the stored
keys), formats.py (the command kind's parsers).

Each stage's registry asks `load(stage)` for the modules of its own stage only (rtvbench.folders).
"""

from __future__ import annotations

from rtvbench.folders import Folders

STAGES = ("params", "decode", "section")
_FOLDERS = Folders(__name__, __file__, STAGES)


def load(stage: str, kind: str | None = None) -> None:
    """Import every kind's module of one stage (or only `kind`'s, when it has a folder), which
    registers it; a kind may lack a stage (a kind with no section of its own gets the generic one)."""
    _FOLDERS.load(stage, kind)
