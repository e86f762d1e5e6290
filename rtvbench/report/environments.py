"""Report parts about the environments: the fingerprint diff and the preflight warnings.

The numbers come from rtvbench.analysis.fingerprint and rtvbench.preflight; this module only lays them out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rtvbench.analysis.evaluation import Evaluation
from rtvbench.analysis.fingerprint import FingerprintDiff, fingerprint_diff
from rtvbench.preflight import PreflightWarning, check, observed_privileges
from rtvbench.report.tables import Row, Table


@dataclass
class FingerprintView:
    table: Table
    equal_fields: list[tuple[str, str]] = field(default_factory=list)   # collapsed: same everywhere
    differing: int = 0


def diff(ev: Evaluation) -> FingerprintDiff | None:
    run = ev.data.run
    seen = observed_privileges(run.measurements)
    granted = {}
    for env, o in seen.items():
        if o.rt_requested:
            granted[env] = (f"real-time priority granted in all {o.rt_requested} measurements" if not o.rt_refused
                            else f"real-time priority refused in {o.rt_refused} of {o.rt_requested} measurements")
    return fingerprint_diff(ev.data.environments, run.fingerprints or {}, getattr(run, "targets", None),
                            getattr(run, "fingerprint_meta", None), granted)


def preflight(ev: Evaluation) -> list[PreflightWarning]:
    """The runner's preflight warnings, recomputed from the stored campaign and fingerprints, with what the
    measurements reported about real-time priority and mlockall in place of the guess."""
    run = ev.data.run
    targets = getattr(run, "targets", None) or {}
    metas = getattr(run, "fingerprint_meta", None) or {}
    prints = {env: (targets.get(env) or {}, run.fingerprints.get(env) or {}, metas.get(env) or {})
              for env in run.fingerprints or {}}
    return check(run.spec, prints, observed_privileges(run.measurements))


def fingerprint_view(ev: Evaluation) -> FingerprintView | None:
    d = diff(ev)
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
