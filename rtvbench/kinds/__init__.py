"""Benchmark kinds, one folder each, so that adding a kind touches one folder.

A kind's folder holds up to three modules, one per stage of the data flow:

  params.py   its campaign keys (a pydantic model) and the probe command they make;
              registers itself in rtvbench.benchmarks.BENCHMARKS (campaign stage)
  decode.py   its probe records as a typed result: figures with unit and direction,
              distribution, time series, per-CPU figures (rtvbench.analysis.kind)
  section.py  its report section: tables, plots, JSON (rtvbench.report.section)

Each stage's registry asks `load(stage)` for the modules of its own stage only, so the
campaign never imports analysis code and analysis never imports the report. The folders
are found on disk rather than listed here: a list would be one more place to edit for a
new kind, and the one place outside its folder where a kind's name would be written.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

STAGES = ("params", "decode", "section")
_loaded: set[str] = set()


def folders() -> list[str]:
    """The kind folders, sorted (module names: a kind named with a dash has an underscore here)."""
    return sorted(info.name for info in pkgutil.iter_modules([str(Path(__file__).parent)]) if info.ispkg)


def load(stage: str) -> None:
    """Import every kind's module of one stage, which registers it; a kind may lack a stage
    (a kind with no section of its own gets the generic one)."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}")
    if stage in _loaded:
        return
    _loaded.add(stage)
    for folder in folders():
        name = f"{__name__}.{folder}.{stage}"
        if (Path(__file__).parent / folder / f"{stage}.py").exists():
            importlib.import_module(name)
