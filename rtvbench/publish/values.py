"""What the site's histories need of each run, kept beside the site so that a publish reads again only
the runs that are new or changed.

A run's history values are the compared figures of each of its cells, one value per complete
repetition: decoding them means loading the run's records and decoding every measurement, which is
most of a publish's time. values.json keeps them per run id with the run's measurement stamp
(store.listing.STAMP_SQL); a run whose stamp is the same as when they were kept (nothing measured,
finished or re-run since) is not read from the store again. Its tags, note and start come from the
list of runs on every publish, so editing them costs no read either."""

from __future__ import annotations

import json
import math
from pathlib import Path

from rtvbench import file_modes
from rtvbench.analysis.dataset import COMPLETE, RunData

VALUES = "values.json"
# A values.json of another layout is read as empty (every run read again), never misread.
LAYOUT = 1


def run_values(data: RunData) -> list[list]:
    """[benchmark, kind, environment, load, figure, values] per compared figure of each of the run's
    cells, values in repetition order: only what is JSON, so that it is kept as it is."""
    rows = []
    for bench in data.benchmarks:
        kind = data.kind(bench)
        if kind is None:
            continue
        for env, load in data.cells(bench):
            per_figure: dict[str, list[float]] = {}
            for m in data.measurements(env, load, bench, COMPLETE):
                for fig, v in data.figures(m).items():
                    if v is not None and math.isfinite(v) and kind.knows(fig):
                        per_figure.setdefault(fig, []).append(float(v))
            # The figures a run compares between its cells: one page each, not one per unit alias
            # and CPU (`rtvbench history` follows those).
            for fig in kind.compared_figures(list(per_figure)):
                if per_figure.get(fig):
                    rows.append([bench, data.kind_name(bench), env, load, fig, per_figure[fig]])
    return rows


def read_kept(site: Path) -> dict[str, dict]:
    """Run id (as text) -> {"stamp": ..., "values": run_values(...)} as the last publish kept them."""
    try:
        doc = json.loads((site / VALUES).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(doc, dict) or doc.get("layout") != LAYOUT or not isinstance(doc.get("runs"), dict):
        return {}
    # A run whose kept values are not as run_values makes them (a file edited or cut short) is read again.
    return {k: v for k, v in doc["runs"].items()
            if isinstance(v, dict) and isinstance(v.get("stamp"), str) and isinstance(v.get("values"), list)
            and all(_is_row(row) for row in v["values"])}


def _is_row(row) -> bool:
    return (isinstance(row, list) and len(row) == 6 and all(isinstance(x, str) for x in row[:5])
            and isinstance(row[5], list) and len(row[5]) > 0
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in row[5]))


def write_kept(site: Path, kept: dict[str, dict]) -> None:
    body = json.dumps({"layout": LAYOUT, "runs": kept}, separators=(",", ":"), sort_keys=True) + "\n"
    file_modes.replace_file(site / VALUES, body.encode("utf-8"))
