"""Writing the published site: its pages rendered from the store, each written only when its content
changed, so re-publishing after a night's runs rewrites the index, the figures those runs measured and
the changes page, plus the new runs' reports, and leaves every other file (and its mtime) alone.

manifest.json keeps each page's SHA-256; per run, what its report was made from (RunEntry.key): a
run whose row and measurements did not change is not read or rendered again; and per figure, a digest
of its history's inputs with its change points: a figure no new run measured is neither searched for
change points nor rendered again. values.json keeps the runs' history values (publish.values). Pages
of an earlier publish that the store no longer gives (a run deleted) are removed."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from rtvbench import file_modes
from rtvbench import __version__
from rtvbench.analysis.changes import MAX_P_VALUE, changes
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


def _renderer() -> str:
    """What draws a figure page besides its data: a page kept from an earlier publish by its inputs
    is drawn again after an upgrade that changed any of it."""
    here = Path(__file__).parent
    sources = [here / "site.py", here / "svg.py", *sorted((here.parent / "templates" / "site").glob("*.j2"))]
    digest = hashlib.sha256(__version__.encode())
    for path in sources:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def figure_inputs(h, notes: dict[int, str], renderer: str) -> str:
    """A digest of everything a figure's page and its change points are made from."""
    doc = [renderer, h.metric, h.figure, getattr(h.kind, "name", ""),
           [[s.environment, s.load, [[p.run_id, _when(p.started_at), p.tags, notes.get(p.run_id, ""), p.values]
                                     for p in s.points]] for s in h.series]]
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def _figure_page(env, h, found: list, notes: dict[int, str]) -> tuple[str, list[dict]]:
    """A figure's page and its change points as rows of the changes page."""
    base = split_cpu(h.figure)[1]

    def fmt(v):
        return h.kind.format(v, base)
    cells = []
    change_rows = []
    for s in h.series:
        steps = [c for c in found if (c.environment, c.load) == (s.environment, s.load)]
        starts = {c.index for c in steps}
        rows = [_change_row(c, fmt) for c in steps]
        change_rows += [{"started": None if c.started_at is None else str(c.started_at), "row": r}
                        for c, r in zip(steps, rows)]
        cells.append({"environment": s.environment, "load": s.load, "anchor": anchor(s.environment, s.load),
                      "svg": history_svg(s.points, sorted(starts), fmt), "changes": rows,
                      "points": [{"run": p.run_id, "started": _when(p.started_at), "tags": _tags(p.tags),
                                  "note": notes.get(p.run_id, ""), "n": len(p.values), "median": fmt(p.median),
                                  "range": f"{fmt(min(p.values))} .. {fmt(max(p.values))}",
                                  "after_change": i in starts} for i, p in enumerate(s.points)]})
    html = env.get_template("site/figure.html.j2").render(title=h.metric, root="../", cells=cells)
    return html, change_rows


_CHANGE_ROW = {"metric", "page", "anchor", "environment", "load", "run_before", "run_after", "when", "before",
               "after", "percent", "p", "command"}


def _kept_changes(rows) -> bool:
    """Whether a figure's change points kept in the manifest are as _figure_page makes them (else, a
    manifest edited by hand, the figure is made again)."""
    return isinstance(rows, list) and all(
        isinstance(c, dict) and set(c) == {"started", "row"} and isinstance(c["started"], (str, type(None)))
        and isinstance(c["row"], dict) and set(c["row"]) == _CHANGE_ROW and isinstance(c["row"]["metric"], str)
        for c in rows)


def render_pages(site: SiteData, with_reports: set[int], kept: dict[str, dict],
                 page_kept: Callable[[str], bool]) -> tuple[dict[str, str | None], dict[str, dict]]:
    """Every page but the runs' reports: relative path -> HTML, or None for a figure page whose inputs
    are those kept from the last publish (`kept`: metric -> {"inputs", "changes"}) and whose file
    page_kept(path) says is still there: neither its change points nor its page are made again.
    Also what to keep for the next publish."""
    from rtvbench.report.html import template_environment

    env = template_environment()
    notes = {r.id: r.note or "" for r in site.runs}
    renderer = _renderer()
    pages: dict[str, str | None] = {}
    figures: dict[str, dict] = {}
    for h in site.figures:
        rel = f"figures/{page_name(h.metric)}"
        inputs = figure_inputs(h, notes, renderer)
        before = kept.get(h.metric)
        if isinstance(before, dict) and before.get("inputs") == inputs and _kept_changes(before.get("changes")) \
                and page_kept(rel):
            figures[h.metric] = before
            pages[rel] = None
            continue
        pages[rel], rows = _figure_page(env, h, changes(h), notes)
        figures[h.metric] = {"inputs": inputs, "changes": rows}
    change_rows = [c for f in figures.values() for c in f["changes"]]
    change_rows.sort(key=lambda c: (c["started"] is not None, str(c["started"]), c["row"]["metric"]), reverse=True)
    pages["changes.html"] = env.get_template("site/changes.html.j2").render(
        title="Change points", root="", changes=[c["row"] for c in change_rows], max_p=MAX_P_VALUE)
    pages["index.html"] = env.get_template("site/index.html.j2").render(
        title="rtvbench results", root="", change_count=len(change_rows),
        campaigns=sorted(site.campaigns.items()),
        environments=[(e, sorted(loads)) for e, loads in sorted(site.environments.items())],
        figures=[{"metric": h.metric, "page": page_name(h.metric), "cells": len(h.series),
                  "changes": len(figures[h.metric]["changes"])} for h in site.figures],
        runs=[{"id": r.id, "campaign": r.campaign, "status": r.status, "started": _when(r.started_at),
               "ok": r.ok, "measurements": r.measurements, "tags": _tags(r.tags), "note": r.note or "",
               "report": r.id in with_reports} for r in reversed(site.runs)])
    return pages, figures


def _manifest(out: Path) -> dict:
    empty = {"pages": {}, "runs": {}, "figures": {}}
    try:
        doc = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return empty
    if not isinstance(doc, dict) or not all(isinstance(doc.get(k), dict) for k in empty):
        return empty
    return doc


def publish(runs: list[RunEntry], read: Callable[[list[tuple[int, bool]]], Iterable[ReadRun]], out: Path,
            plots: bool = False) -> Published:
    """Publish the listed runs into the directory `out`. read(todo) reads each (run id, whether its
    report is wanted) of `todo` from the store, as publish.reading.read_runs does; it is asked only
    for the runs whose report or history values the site does not have yet. `plots`: whether read
    draws the reports' plots (a report made the other way is made again)."""
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
        key = run_keys[str(entry.id)] = entry.key() + (" with plots" if plots else "")
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
    pages, figures = render_pages(site, {r.id for r in runs}, old["figures"],
                                  lambda rel: rel in old["pages"] and (out / rel).is_file())
    for rel, html in pages.items():
        if html is None:
            hashes[rel] = old["pages"][rel]
            result.unchanged.append(rel)
        else:
            put(rel, html.encode("utf-8"))
    for rel in sorted(set(old["pages"]) - set(hashes)):
        (out / rel).unlink(missing_ok=True)
        result.removed.append(rel)
    file_modes.make_dirs(out)
    write_kept(out, {str(r.id): {"stamp": r.stamp, "values": values[r.id]} for r in runs if r.id in values})
    file_modes.replace_file(out / MANIFEST, (json.dumps({"pages": hashes, "runs": run_keys, "figures": figures}, indent=0,
                                                        sort_keys=True) + "\n").encode("utf-8"))
    return result
