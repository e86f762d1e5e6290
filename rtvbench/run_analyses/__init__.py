"""Analyses of a whole run beside the benchmark kinds' own (its thermal state, a soak's verdict),
one folder each, so that adding one touches its folder and one line (ORDER, below).

A folder holds two modules, one per stage of the data flow:

  analysis.py  computes the analysis's typed part of the Evaluation from the run (analysis stage);
               registers a RunAnalysis in rtvbench.analysis.run_analysis.RUN_ANALYSES
  section.py   words that part in every report format: a headline, summary tables, warnings,
               JSON keys (report stage); registers a RunSection in rtvbench.report.run_section

Each stage's registry asks `load(stage)` for the modules of its own stage only (rtvbench.folders).
"""

from __future__ import annotations

from rtvbench.folders import Folders

STAGES = ("analysis", "section")
#: The run analyses in the order their sections appear in the report (their tables in a benchmark's
#: section, their headlines, warnings and summary tables): a new one is its folder and its name here.
ORDER = ("thermal", "host_usage", "disruption", "vm_scaling", "soak")
_FOLDERS = Folders(__name__, __file__, STAGES, ORDER)
#: import every run analysis's module of one stage, which registers it
load = _FOLDERS.load
on_disk = _FOLDERS.on_disk
