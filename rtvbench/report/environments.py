"""The report's table of the environments' fingerprints side by side.

The fingerprint diff comes from the evaluation; this module only lays it out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rtvbench.analysis.evaluation import Evaluation
from rtvbench.report.tables import Row, Table


@dataclass
class FingerprintView:
    table: Table
    equal_fields: list[tuple[str, str]] = field(default_factory=list)   # collapsed: same everywhere
    differing: int = 0


def fingerprint_view(ev: Evaluation) -> FingerprintView | None:
    d = ev.run_parts.fingerprints
    if d is None:
        return None
    several = len(d.environments) > 1
    rows, equal = [], []
    for r in d.rows:
        if r.key_fact or r.differs:
            label = r.label if r.key_fact else f"`{r.label}`"
            rows.append(Row([label, *r.values], "differs" if r.differs else ("same" if several else "")))
        else:
            equal.append((r.label, r.values[0]))
    n = len(d.differing)
    if several:
        caption = (f"Environment fingerprints: {n} row{'s' if n != 1 else ''} differ{'s' if n == 1 else ''} "
                   "(highlighted)" if n else "Environment fingerprints: identical in every field recorded")
        note = ("Rows whose values differ between environments are highlighted; the key facts that are equal "
                "everywhere are greyed.")
    else:
        caption, note = "Environment fingerprint", ""
    if equal:
        note += (" " if note else "") + (f"{len(equal)} more recorded field{'s' if len(equal) != 1 else ''}"
                                         + (" equal in every environment" if several else "")
                                         + " are listed below the table.")
    table = Table(caption, ["Field", *d.environments], rows, note=note)
    return FingerprintView(table, equal, n)
