"""Markdown report: the HTML report's content as text and tables, without plots."""

from __future__ import annotations

import re

from rtvbench.analysis.evaluation import Evaluation
from rtvbench.report.model import ReportModel, Table, build

_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
_BACKTICKED = re.compile(r"`([^`]*)`")


def text(value: str) -> str:
    """Plain Markdown text: HTML-significant characters as entities (a renderer passes raw HTML through),
    Markdown punctuation backslash-escaped, newlines flattened so a table cell stays one cell."""
    value = str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _SPECIAL.sub(r"\\\1", value).replace("\r", " ").replace("\n", " ")


def code(value: str) -> str:
    """An inline code span that survives backticks and pipes in the value."""
    value = str(value).replace("\n", " ").replace("|", "\\|")
    fence = "`" * (max((len(m) for m in re.findall(r"`+", value)), default=0) + 1)
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def prose(value: str) -> str:
    """Sentences whose `names` become code spans and everything else escaped text."""
    out, last = [], 0
    for m in _BACKTICKED.finditer(value):
        out.append(text(value[last:m.start()]))
        out.append(code(m.group(1)))
        last = m.end()
    out.append(text(value[last:]))
    return "".join(out)


def _fenced(value: str) -> str:
    fence = "`" * max(3, max((len(m) for m in re.findall(r"`+", value)), default=0) + 1)
    return f"{fence}\n{value}\n{fence}"


def table(t: Table) -> str:
    width = len(t.header)
    lines = [f"**{prose(t.caption)}**", "", "| " + " | ".join(text(h) for h in t.header) + " |",
             "|" + "|".join("---" for _ in t.header) + "|"]
    for r in t.rows:
        cells = [prose(c) for c in r.cells]
        if r.css == "differs" and cells:
            # Markdown has no row colour: a differing row is marked and set in bold.
            cells = [f"**≠ {cells[0]}**"] + [f"**{c}**" if c else c for c in cells[1:]]
        lines.append("| " + " | ".join(cells + [""] * (width - len(r.cells))) + " |")
    for r in t.foot:
        lines.append("| " + " | ".join(f"**{prose(c)}**" if c else "" for c in r.cells) + " |")
    if t.note:
        lines += ["", f"_{prose(t.note)}_"]
    return "\n".join(lines)


def render_markdown(ev: Evaluation) -> str:
    return _render(build(ev, with_plots=False))


def _render(m: ReportModel) -> str:
    out = [f"# {text(m.title)}", "", "## 1. Summary", ""]
    out += [f"- **{text(k)}:** {text(v)}" for k, v in m.facts] + [""]
    if m.preflight:
        out += ["**Preflight warnings: what in the environments bends these figures**", ""]
        out += [f"- ⚠ {prose(w.text)}" for w in m.preflight] + [""]
    for h in m.headlines:
        out += [f"**{h.label}.** {prose(h.text)}", ""]
        for t in h.tables:
            out += [table(t), ""]
    for t in (m.verdicts, *m.key_results, *m.run_tables, m.environments, m.loads, m.benchmarks):
        if t is not None:
            out += [table(t), ""]
    if m.warnings:
        out += ["**Warnings**", ""] + [f"- {prose(w.text)}" for w in m.warnings] + [""]
    out += ["## 2. Environments", ""]
    out += [table(m.fingerprints) if m.fingerprints else "No environment fingerprint was recorded.", ""]
    if m.fingerprint_equal:
        several = len(m.fingerprints.header) > 2 if m.fingerprints else False
        out += [f"<details><summary>{len(m.fingerprint_equal)} more recorded field"
                f"{'s' if len(m.fingerprint_equal) != 1 else ''}{' equal in every environment' if several else ''}"
                "</summary>", ""]
        out += [f"- {code(k)}: {text(v)}" for k, v in m.fingerprint_equal] + ["", "</details>", ""]
    if m.target_failures:
        out += ["**Target failures** (the target went away during these measurements; each was recorded as "
                "failed and retried once; the end of the target's own log):", ""]
        for f in m.target_failures:
            out += [f"- {text(f.title)}: {prose(f.error)}", "", _fenced(f.log), ""]
    for i, s in enumerate(m.sections, start=3):
        out += [f"## {i}. Benchmark {code(s.name)} ({text(s.kind)})", "",
                f"### ({i}.1) Description", "", prose(s.description), "",
                f"### ({i}.2) Precondition", ""] + [f"- {prose(p)}" for p in s.preconditions] + [""]
        out += [f"### ({i}.3) How to measure", ""] + ([prose(s.procedure), ""] if s.procedure else [])
        for title, probe, loads in s.commands:
            out += [f"**{text(title)}**" + (": start the load, then run the probe" if loads else ""), ""]
            out += [_fenced(c) + "\n" for c in loads + probe]
        out += [f"### ({i}.4) Result", ""]
        for t in s.repetition_tables + s.comparison_tables + s.ranking_tables + s.load_tables:
            out += [table(t), ""]
        for e in s.excerpts:
            out += [f"**{prose(e.title)}**", "", _fenced(e.text), ""]
        out += [f"### ({i}.5) Consideration", "",
                " ".join(prose(c.text) for c in s.consideration if c.severity == "info"), ""]
        out += [f"- ⚠ {prose(c.text)}" for c in s.consideration if c.severity == "warning"] + [""]
    if m.against:
        n = len(m.sections) + 3
        out += [f"## {n}. {text(m.against.title)}", ""]
        for t in m.against.tables + m.against.fingerprints:
            out += [table(t), ""]
        out += [f"- {prose(s)}" for s in m.against.sentences] + [""]
    return "\n".join(out).rstrip() + "\n"
