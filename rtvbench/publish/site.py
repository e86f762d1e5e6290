"""Writing the published site: its pages rendered from the store, each written only when its content
changed, so re-publishing after a night's runs rewrites the index, the figures those runs measured and
the changes page, plus the new runs' reports, and leaves every other file (and its mtime) alone.

manifest.json keeps each page's SHA-256 and, per run, what its report was made from (RunEntry.key):
a run whose row did not change is neither evaluated nor rendered again. Pages of an earlier publish
that the store no longer gives (a run deleted) are removed."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from rtvbench import file_modes
from rtvbench.analysis.changes import MAX_P_VALUE
from rtvbench.analysis.kind import split_cpu
from rtvbench.errors import InputError
from rtvbench.publish.collect import RunEntry, SiteData, collect
from rtvbench.publish.reading import ReadRun
from rtvbench.publish.svg import history_svg
from rtvbench.publish.values import read_kept, write_kept
from rtvbench.units import format_percent

MANIFEST = "manifest.json"


@dataclass
class Published:
    written: list[str] = field(default_factory=list)     # pages rewritten, relative to the site
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    runs_read: list[int] = field(default_factory=list)   # from the store, the others' values were kept


def page_name(metric: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", metric) + ".html"


def anchor(environment: str, load: str) -> str:
    return "cell-" + hashlib.sha256(f"{environment}\0{load}".encode()).hexdigest()[:12]


def _when(t) -> str:
    return t.strftime("%Y-%m-%d %H:%M") if t else "–"


def _tags(tags: dict[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in tags.items())


def _change_row(c, fmt) -> dict:
    return {"metric": c.metric, "page": page_name(c.metric), "anchor": anchor(c.environment, c.load),
            "environment": c.environment, "load": c.load, "run_before": c.run_before, "run_after": c.run_after,
            "when": _when(c.started_at), "before": fmt(c.median_before), "after": fmt(c.median_after),
            "percent": "n/a" if c.change_percent is None else format_percent(c.change_percent),
            "p": f"{c.p_value:.2g}", "command": c.compare_command()}


def render_pages(site: SiteData, with_reports: set[int]) -> dict[str, str]:
    """Every page but the runs' reports: relative path -> HTML."""
    from rtvbench.report.html import template_environment

    env = template_environment()
    notes = {r.id: r.note or "" for r in site.runs}
    pages = {}
    change_rows = []
    for f in site.figures:
        h = f.history
        base = split_cpu(h.figure)[1]

        def fmt(v, kind=h.kind, base=base):
            return kind.format(v, base)
        cells = []
        for s in h.series:
            steps = [c for c in f.changes if (c.environment, c.load) == (s.environment, s.load)]
            starts = {c.index for c in steps}
            rows = [_change_row(c, fmt) for c in steps]
            change_rows += [(c.started_at, r) for c, r in zip(steps, rows)]
            cells.append({"environment": s.environment, "load": s.load, "anchor": anchor(s.environment, s.load),
                          "svg": history_svg(s.points, sorted(starts), fmt), "changes": rows,
                          "points": [{"run": p.run_id, "started": _when(p.started_at), "tags": _tags(p.tags),
                                      "note": notes.get(p.run_id, ""), "n": len(p.values), "median": fmt(p.median),
                                      "range": f"{fmt(min(p.values))} .. {fmt(max(p.values))}",
                                      "after_change": i in starts} for i, p in enumerate(s.points)]})
        pages[f"figures/{page_name(h.metric)}"] = env.get_template("site/figure.html.j2").render(
            title=h.metric, root="../", cells=cells)
    change_rows.sort(key=lambda tr: (tr[0] is not None, str(tr[0]), tr[1]["metric"]), reverse=True)
    pages["changes.html"] = env.get_template("site/changes.html.j2").render(
        title="Change points", root="", changes=[r for _, r in change_rows], max_p=MAX_P_VALUE)
    pages["index.html"] = env.get_template("site/index.html.j2").render(
        title="rtvbench results", root="", change_count=len(change_rows),
        campaigns=sorted(site.campaigns.items()),
        environments=[(e, sorted(loads)) for e, loads in sorted(site.environments.items())],
        figures=[{"metric": f.history.metric, "page": page_name(f.history.metric), "cells": len(f.history.series),
                  "changes": len(f.changes)} for f in site.figures],
        runs=[{"id": r.id, "campaign": r.campaign, "status": r.status, "started": _when(r.started_at),
               "ok": r.ok, "measurements": r.measurements, "tags": _tags(r.tags), "note": r.note or "",
               "report": r.id in with_reports} for r in reversed(site.runs)])
    return pages


def _manifest(out: Path) -> dict:
    try:
        doc = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
        return doc if isinstance(doc.get("pages"), dict) and isinstance(doc.get("runs"), dict) else {"pages": {}, "runs": {}}
    except (OSError, ValueError, AttributeError):
        return {"pages": {}, "runs": {}}


def publish(runs: list[RunEntry], read: Callable[[list[tuple[int, bool]]], Iterable[ReadRun]], out: Path) -> Published:
    """Publish the listed runs into the directory `out`. read(todo) reads each (run id, whether its
    report is wanted) of `todo` from the store, as publish.reading.read_runs does; it is asked only
    for the runs whose report or history values the site does not have yet."""
    if out.exists() and not out.is_dir():
        raise InputError(f"{out} is a file, not a directory: give the site's directory with -o DIR.")
    if not runs:
        raise InputError("the store has no run to publish yet: `rtvbench list` shows what a store holds, "
                         "--store names another.")
    old = _manifest(out)
    kept = read_kept(out)
    result = Published()
    hashes: dict[str, str] = {}
    run_keys: dict[str, str] = {}
    values: dict[int, list] = {}
    todo = []

    def put(rel: str, body: bytes) -> None:
        digest = hashlib.sha256(body).hexdigest()
        hashes[rel] = digest
        path = out / rel
        if old["pages"].get(rel) == digest and path.is_file():
            result.unchanged.append(rel)
            return
        file_modes.make_dirs(path.parent)
        file_modes.replace_file(path, body)
        result.written.append(rel)

    for entry in runs:
        rel = f"runs/{entry.id}.html"
        key = run_keys[str(entry.id)] = entry.key()
        report = not (old["runs"].get(str(entry.id)) == key and rel in old["pages"] and (out / rel).is_file())
        if not report:
            hashes[rel] = old["pages"][rel]
            result.unchanged.append(rel)
        known = kept.get(str(entry.id))
        if known is not None and known["stamp"] == entry.stamp:
            values[entry.id] = known["values"]
        if report or entry.id not in values:
            todo.append((entry.id, report))
    for run_id, run_values, html in read(todo) if todo else ():
        values[run_id] = run_values
        result.runs_read.append(run_id)
        if html is not None:
            put(f"runs/{run_id}.html", html)
    site = collect(runs, values)
    for rel, html in render_pages(site, {r.id for r in runs}).items():
        put(rel, html.encode("utf-8"))
    for rel in sorted(set(old["pages"]) - set(hashes)):
        (out / rel).unlink(missing_ok=True)
        result.removed.append(rel)
    file_modes.make_dirs(out)
    write_kept(out, {str(r.id): {"stamp": r.stamp, "values": values[r.id]} for r in runs if r.id in values})
    file_modes.replace_file(out / MANIFEST, (json.dumps({"pages": hashes, "runs": run_keys}, indent=0,
                                                        sort_keys=True) + "\n").encode("utf-8"))
    return result
