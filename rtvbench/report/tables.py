"""The report's building blocks as plain data: tables of formatted cells, plots, sentences.

A leaf module: the report model, every kind's section and the renderers share these types, and
it imports nothing of rtvbench, so no section needs the assembler to describe its tables. Cells
hold raw user-supplied text; escaping is the renderer's job.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Row:
    cells: list[str]
    css: str = ""                  # "summary", "failed", "differs", "pass", "fail", "inconclusive"


@dataclass
class Table:
    caption: str
    header: list[str]
    rows: list[Row]
    foot: list[Row] = field(default_factory=list)
    note: str = ""
    numeric_from: int | None = None    # first right-aligned column; None: the renderer's default
    numeric_to: int | None = None      # first column after them that is text again; None: none


@dataclass
class Excerpt:
    """Preformatted text shown folded under a title (a kernel trace around a latency spike)."""

    title: str
    text: str


@dataclass
class Plot:
    title: str
    svg: str


@dataclass
class Sentence:
    severity: str                  # "info" | "warning"
    text: str                      # names in backticks


@dataclass
class Headline:
    """A run analysis's verdict at the top of the summary: "**Soak.** The soak ran ...", its tables."""
    label: str                     # "Soak"
    anchor: str                    # the HTML id of the sentence; its tables' ids start with it
    text: str
    tables: list[Table] = field(default_factory=list)
