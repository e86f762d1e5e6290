"""The extension point of the analyses over a whole run (rtvbench/run_analyses/<name>/analysis.py).

Each computes one typed part of the Evaluation, once, from the run's data and what surrounded each
measurement; every report format then words that part through the analysis's own section, so no
format computes it again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, TypeVar

from rtvbench.analysis.dataset import RunData
from rtvbench.registry import Registry

P = TypeVar("P")


@dataclass(frozen=True)
class RunAnalysis(Generic[P]):
    name: str
    #: the part from the run's data and what surrounded each measurement (measurement id ->
    #: evaluation.Surroundings, which imports this module), or None when it does not apply to this run
    #: (a soak's verdict of an ordinary run)
    compute: Callable[[RunData, dict[int, Any]], "P | None"]


RUN_ANALYSES: Registry[RunAnalysis[Any]] = Registry("run analysis")


def run_analyses() -> list[RunAnalysis[Any]]:
    """Every registered run analysis."""
    from rtvbench.run_analyses import load

    load("analysis")
    return [RUN_ANALYSES.get(name) for name in RUN_ANALYSES.names()]
