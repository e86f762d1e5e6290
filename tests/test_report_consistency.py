"""The report says nothing the evaluation does not: over a stored run of every example campaign
(tests/fixtures/examples, shortened runs) and the golden runs (tests/fixtures/golden), the HTML and
Markdown reports print only figures the JSON export holds, with the same unit; a p value stands under
the name of the test that gave it; no time or share is negative, no share of one CPU or loss is above
100 %, no time has a minimum of 0; a count of one is said in the singular; and a benchmark's
description says what its parameters are.

The check knows no campaign: it reads every number of the rendered text and looks for it in the JSON
document (its numbers, read with the unit their key names, and the numbers of its sentences) and in the
run's resolved campaign (a parameter echoed: "every 1 ms" is `interval_us = 1000`).

What is not a figure, and is skipped (the whole list): code (`names`, command lines), headings and
section references ("(3.5)"), dates and times of day, run ids ("#3"), versions ("0.1.0"), hexadecimal
hashes, CPU lists ("CPUs 0-1"), process ids ("pid 123"), a table's row number ("#" column), a column
of figure names and labels ("Figure": "read 1 B (/dev/zero)"), a number that is part of a name (cpu50,
p99.9, x86_64, 2p/16k), and the report's own wording: a piece of prose of more than 60 characters
printed word for word in the reports of two campaigns ("sampled every 0.5 s") says no run's figure.
"""

from __future__ import annotations

import dataclasses
import gzip
import html
import json
import math
import re
import sqlite3
from dataclasses import dataclass
from functools import lru_cache
from html.parser import HTMLParser
from pathlib import Path

import pytest

from rtvbench.analysis.evaluation import evaluate_run
from rtvbench.report import render_evaluation
from rtvbench.store import load_run, open_store

pytestmark = pytest.mark.functional

FIXTURES = Path(__file__).resolve().parent / "fixtures"
DUMPS = {"golden": FIXTURES / "golden" / "runs.sql", "examples": FIXTURES / "examples" / "runs.sql.gz"}

# A printed unit -> (dimension, factor to the dimension's base unit).
UNITS = {
    "ns": ("s", 1e-9), "us": ("s", 1e-6), "µs": ("s", 1e-6), "ms": ("s", 1e-3), "s": ("s", 1.0),
    "min": ("s", 60.0), "h": ("s", 3600.0),
    "%": ("%", 1.0), "points": ("%", 1.0),
    "B": ("B", 1.0), "KiB": ("B", 2.0**10), "MiB": ("B", 2.0**20), "GiB": ("B", 2.0**30),
    "kB": ("B", 1e3), "MB": ("B", 1e6), "GB": ("B", 1e9),
    "B/s": ("B/s", 1.0), "KB/s": ("B/s", 1e3), "kB/s": ("B/s", 1e3), "MB/s": ("B/s", 1e6),
    "GB/s": ("B/s", 1e9), "MiB/s": ("B/s", 2.0**20), "GiB/s": ("B/s", 2.0**30),
    "Hz": ("Hz", 1.0), "kHz": ("Hz", 1e3), "MHz": ("Hz", 1e6), "GHz": ("Hz", 1e9),
    "°C": ("°C", 1.0),
    # rates of things counted: operations, floating-point operations, lines
    **{f"{prefix}{sep}{thing}/s": ("1/s", factor) for prefix, factor in (("", 1.0), ("k", 1e3), ("M", 1e6), ("G", 1e9))
       for thing in ("ops", "flop", "lines", "files") for sep in (("", " ") if prefix else ("",))},
    "/s": ("1/s", 1.0),
}
# A JSON key's or campaign key's unit suffix -> a printed unit of UNITS.
KEY_UNITS = {
    "ns": "ns", "us": "us", "ms": "ms", "s": "s", "percent": "%", "pct": "%", "bytes": "B",
    "GBps": "GB/s", "MBps": "MB/s", "Bps": "B/s", "khz": "kHz", "kHz": "kHz", "mhz": "MHz",
    "mbps": "MiB/s", "bps": "B/s", "mib": "MiB", "hours": "h", "per_s": "/s", "points": "points",
    "sizes": "B", "size": "B",
}
_UNIT_RE = "|".join(sorted((re.escape(u) for u in UNITS), key=len, reverse=True))
# A number standing alone (not part of a name, a range or a list of CPUs), with the unit after it.
NUMBER = re.compile(
    r"(?<![\w.#/\-+^])(?P<sign>[-−])?(?P<num>\d{1,3}(?:,\d{3})+(?![\d])|\d{1,3}(?:[ \u2009\u202f]\d{3})+(?![\d.,])|\d+(?:\.\d+)?(?:e[+-]?\d+)?)"
    rf"(?![\w]|\.\d|-\d|/\d)(?:\s?(?P<unit>{_UNIT_RE})(?![\w/]))?")
NOT_FIGURES = [
    re.compile(r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([+-]\d{2}:\d{2})?)?( UTC)?"),
    re.compile(r"\b\d{1,2}:\d{2}(:\d{2})?\b"),
    re.compile(r"#\d+"),
    re.compile(r"\(\d+(\.\d+)+\)|\b\d+\.\d+\.\d+\S*"),
    re.compile(r"\b[0-9a-f]{7,64}\b"),
    re.compile(r"\bCPUs?\s+\d+(?:\s*[-,]\s*\d+|\s+and\s+\d+)*", re.IGNORECASE),
    re.compile(r"\bpids?\s+\d+(?:,\s*\d+)*", re.IGNORECASE),
]


_CAMPAIGN_SIZE = re.compile(r"(\d+)([KMG])")


@dataclass(frozen=True)
class Printed:
    value: float
    unit: str | None
    decimals: int           # digits after the point as printed (negative: trailing zeros of an integer)
    text: str               # the number and what surrounds it, for the failure's message


def _decimals(num: str) -> int:
    if "e" in num:              # 8.41e-07: two decimals of the mantissa, seven more of the exponent
        mantissa, exponent = num.split("e")
        return _decimals(mantissa) - int(exponent)
    if "." in num:
        return len(num.split(".")[1])
    digits = re.sub(r"[, \u2009\u202f]", "", num)
    return -(len(digits) - len(digits.rstrip("0"))) if digits.strip("0") else 0


def numbers(text: str) -> list[Printed]:
    """Every figure printed in `text`, with its unit where one follows it."""
    for pattern in NOT_FIGURES:
        text = pattern.sub(lambda m: " " * len(m.group(0)), text)
    out = []
    for m in NUMBER.finditer(text):
        value = float(re.sub(r"[, \u2009\u202f]", "", m.group("num")))
        if m.group("sign"):
            value = -value
        out.append(Printed(value, m.group("unit"), _decimals(m.group("num")),
                           text[max(0, m.start() - 60):m.end() + 20].replace("\n", " ")))
    return out


# A column of figures' names and labels ("file create + delete 0 B `file_create_delete.0k`"): names.
NAME_COLUMNS = {"figure"}
# Columns of a row with a "Unit" column that are not in that unit: counts, a p value, a verdict.
NOT_IN_ROW_UNIT = {"n", "p", "verdict", "overhead", "95 % ci"}


@dataclass(frozen=True)
class Chunk:
    """A piece of a report's text: a table cell with its column's header and the unit it names (or
    its row's "Unit" column gives), or a piece of prose."""
    text: str
    unit: str | None = None
    head: str = ""


def header_unit(header: str) -> str | None:
    """The unit a table column's header names: "max (us)"."""
    m = re.search(rf"(?:\(({_UNIT_RE})\)|\s({_UNIT_RE}))\s*$", header.strip())
    return (m.group(1) or m.group(2)) if m else None


class _ReportText(HTMLParser):
    """The HTML report's text as chunks, each with the unit its table column's header names; code,
    headings, scripts, styles and plots left out."""

    SKIP = {"code", "pre", "script", "style", "svg", "h1", "h2", "h3", "h4", "h5", "h6", "title"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.chunks: list[Chunk] = []
        self.skip = 0
        self.headers: list[list[str]] = []
        self.column = -1
        self.cell: list[str] | None = None
        self.in_header = False
        self.row_unit: str | None = None     # a row's unit, where a column "Unit" gives it

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self.skip += 1
        elif tag == "table":
            self.headers.append([])
        elif tag == "tr":
            self.column, self.row_unit = -1, None
        elif tag in ("td", "th"):
            self.column += int(dict(attrs).get("colspan") or 1)
            self.cell, self.in_header = [], tag == "th"

    def handle_endtag(self, tag):
        if tag in self.SKIP:
            self.skip -= 1
        elif tag == "table" and self.headers:
            self.headers.pop()
        elif tag in ("td", "th") and self.cell is not None:
            text = " ".join(self.cell)
            if self.in_header and self.headers:
                self.headers[-1].append(text)
            heads = self.headers[-1] if self.headers else []
            head = heads[self.column].strip() if 0 <= self.column < len(heads) else ""
            if not self.in_header and head.lower() == "unit":
                self.row_unit = text.strip() if text.strip() in UNITS else None
            elif not self.in_header and head != "#" and head.lower() not in NAME_COLUMNS:
                row_unit = None if head.lower() in NOT_IN_ROW_UNIT else self.row_unit
                self.chunks.append(Chunk(text, header_unit(head) or row_unit, head))
            self.cell = None

    def handle_data(self, data):
        if self.skip:
            return
        if self.cell is not None:
            self.cell.append(data)
        else:
            self.chunks.append(Chunk(data))


def html_chunks(text: str) -> list[Chunk]:
    parser = _ReportText()
    parser.feed(text)
    return parser.chunks


def markdown_chunks(text: str) -> list[Chunk]:
    """The Markdown report's text as html_chunks gives the HTML's."""
    text = re.sub(r"```.*?```", " ", text, flags=re.DOTALL)
    chunks, heads = [], None
    for line in text.splitlines():
        line = re.sub(r"`[^`]*`", " ", line.replace("\\`", "'"))
        line = html.unescape(re.sub(r"<[^>]+>", " ", line)).replace("\\", "")
        if line.startswith("#"):
            continue
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if heads is None:
                heads = cells
            elif not all(set(c) <= set("-: ") for c in cells):
                row = dict(zip((h.lower() for h in heads), cells))
                row_unit = row.get("unit") if row.get("unit") in UNITS else None
                for head, cell in zip(heads, cells):
                    if head not in ("#", "Unit") and head.lower() not in NAME_COLUMNS:
                        unit = None if head.lower() in NOT_IN_ROW_UNIT else row_unit
                        chunks.append(Chunk(cell, header_unit(head) or unit, head))
            continue
        heads = None
        chunks.append(Chunk(line))
    return chunks


def _key_unit(key: str) -> str | None:
    for suffix, unit in sorted(KEY_UNITS.items(), key=lambda kv: -len(kv[0])):
        if key.endswith("_" + suffix) or key == suffix:
            return unit
    return None


def _leaves(node, path: str = "", unit: str | None = None):
    """(path, value, unit) of every number of a JSON document: the unit its key names, else the
    nearest enclosing key's, else its object's `unit`, else the unit of the figure its object is about
    (`{"figure": "avg_us", "median": ...}`)."""
    if isinstance(node, dict):
        about = node.get("unit") if node.get("unit") in UNITS else None
        about = about or next((_key_unit(node[k]) for k in ("figure", "metric") if isinstance(node.get(k), str)), None)
        for k, v in node.items():
            yield from _leaves(v, f"{path}.{k}", _key_unit(str(k)) or about or unit)
    elif isinstance(node, (list, tuple)):
        for i, v in enumerate(node):
            yield from _leaves(v, f"{path}[{i}]", unit)
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        yield path, node, unit


def _strings(node):
    if isinstance(node, dict):
        node = list(node.values())
    if isinstance(node, (list, tuple)):
        for v in node:
            yield from _strings(v)
    elif isinstance(node, str):
        yield node


class Pool:
    """The figures a report may print: (dimension, value in its base unit) for those with a unit,
    and every value as it stands for a number printed without one."""

    def __init__(self):
        self.with_unit: dict[str, list[float]] = {}
        self.bare: list[float] = []
        self.sentences: list[str] = []

    def add(self, value: float, unit: str | None) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return
        self.bare.append(float(value))
        if unit is not None:
            dim, factor = UNITS[unit]
            self.with_unit.setdefault(dim, []).append(value * factor)

    def add_text(self, text: str) -> None:
        size = _CAMPAIGN_SIZE.fullmatch(text.strip())
        if size:                # a campaign's size: "4K"
            self.add(float(size.group(1)), {"": "B", "K": "KiB", "M": "MiB", "G": "GiB"}[size.group(2)])
        for p in numbers(text):
            self.add(p.value, p.unit)

    def add_tree(self, node) -> None:
        for _, value, unit in _leaves(node):
            self.add(value, unit)
        for text in _strings(node):
            self.add_text(text)
            self.sentences.append(text)

    def quoted(self, text: str) -> list[str]:
        """The pieces of a printed text (split at parentheses) that a JSON sentence holds word for word,
        such as a reason quoted in a table cell: their numbers are the sentence's, not the column's."""
        pieces = [p.strip() for p in re.split(r"[()]", text) if len(p.strip()) >= 20]
        return [p for p in pieces if p in self.joined]

    def finish(self) -> None:
        self.joined = "\0".join(self.sentences)
        self.bare.sort()
        for values in self.with_unit.values():
            values.sort()

    def holds(self, p: Printed) -> bool:
        # The printed rounding: half a unit of the last digit printed, in the printed unit.
        tol = 0.5 * 10.0 ** (-p.decimals) * (1 + 1e-9) + 1e-12
        if p.unit is None:
            return _near(self.bare, p.value, tol) or _near(self.bare, -p.value, tol)
        dim, factor = UNITS[p.unit]
        return _near(self.with_unit.get(dim, []), p.value * factor, tol * factor)


def _near(values: list[float], x: float, tol: float) -> bool:
    import bisect
    i = bisect.bisect_left(values, x - tol)
    return i < len(values) and values[i] <= x + tol


@dataclass
class Rendered:
    name: str               # "<dump> run <id> (<campaign>)"
    html: str
    md: str
    doc: dict
    spec: object


@lru_cache(maxsize=None)
def _store(dump: str, tmp: str) -> str:
    path = Path(tmp) / f"{dump}.db"
    source = DUMPS[dump]
    opener = gzip.open if source.suffix == ".gz" else open
    with opener(source, "rt", encoding="utf-8") as f, sqlite3.connect(path) as conn:
        conn.executescript(f.read())
    return f"sqlite:///{path}"


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> list[Rendered]:
    tmp = str(tmp_path_factory.mktemp("consistency"))
    out = []
    for dump in DUMPS:
        engine = open_store(_store(dump, tmp))
        with sqlite3.connect(_store(dump, tmp)[len("sqlite:///"):]) as conn:
            ids = [r[0] for r in conn.execute("SELECT id FROM runs ORDER BY id")]
        for run_id in ids:
            run = load_run(engine, run_id)
            ev = evaluate_run(run)
            doc = json.loads(render_evaluation(ev, "json"))
            out.append(Rendered(f"{dump} run {run_id} ({doc['run']['campaign']})",
                                render_evaluation(ev, "html"), render_evaluation(ev, "md"), doc, run.spec))
    return out


def test_the_stored_runs_cover_every_example_campaign(reports):
    """A new example is recorded too (tests/fixtures/examples/record.py), else nothing checks its report."""
    import tomllib
    examples = {tomllib.loads(p.read_text(encoding="utf-8"))["name"]
                for p in (FIXTURES.parent.parent / "examples").glob("*.toml")}
    stored = {r.doc["run"]["campaign"] for r in reports if r.doc["run"].get("status") == "finished"}
    assert examples <= stored, f"no finished stored run of {sorted(examples - stored)}"


def pool_of(r: Rendered) -> Pool:
    """What a report of `r` may print: its JSON document and its resolved campaign."""
    pool = Pool()
    pool.add_tree(r.doc)
    pool.add_tree(dataclasses.asdict(r.spec))
    pool.finish()
    return pool


def _texts(r: Rendered):
    return (("html", html_chunks(r.html)), ("md", markdown_chunks(r.md)))


def fixed_wording(reports: list[Rendered]) -> set[str]:
    """Pieces of prose of more than 60 characters printed word for word in the reports of two campaigns:
    the report's own wording ("every 0.5 s", "a 1 kHz loop"), no figure of a run."""
    seen: dict[str, set[str]] = {}
    for r in reports:
        for _, chunks in _texts(r):
            for c in chunks:
                if len(c.text.strip()) > 60 and not c.head:
                    seen.setdefault(c.text.strip(), set()).add(r.doc["run"]["campaign"])
    return {text for text, campaigns in seen.items() if len(campaigns) > 1}


def test_every_number_printed_is_in_the_json_with_its_unit(reports):
    problems = []
    fixed = fixed_wording(reports)
    for r in reports:
        pool = pool_of(r)
        for fmt, chunks in _texts(r):
            missing = {}
            for c in chunks:
                if c.text.strip() in fixed:
                    continue
                text = c.text
                for piece in pool.quoted(text) if c.unit is not None else ():
                    text = text.replace(piece, " ")
                    missing.update({(p.value, p.unit): p.text for p in numbers(piece) if not pool.holds(p)})
                for p in numbers(text):
                    if p.unit is None and c.unit is not None:
                        p = Printed(p.value, c.unit, p.decimals, f"{p.text} [column {c.head!r}]")
                    if not pool.holds(p):
                        missing.setdefault((p.value, p.unit), p.text)
            problems += [f"{r.name} {fmt}: {v:g} {u or ''} not in the JSON: ...{t}..."
                         for (v, u), t in missing.items()]
    assert not problems, f"{len(problems)} printed figures the JSON does not hold:\n" + "\n".join(problems[:80])


def _comparisons(node):
    """Every object of the JSON document that has a p value and names its test."""
    if isinstance(node, dict):
        if "p_value" in node and isinstance(node.get("p_test"), str):
            yield node
        for v in node.values():
            yield from _comparisons(v)
    elif isinstance(node, list):
        for v in node:
            yield from _comparisons(v)


def test_a_p_value_stands_under_the_name_of_its_test(reports):
    """A column "p (X)" prints p values of comparisons decided by test X (the JSON's `p_test` beside each
    p value, and its `method` in full), and of no other test."""
    problems = []
    for r in reports:
        by_method: dict[str, list[float]] = {}
        for c in _comparisons(r.doc):
            if isinstance(c["p_value"], (int, float)):
                by_method.setdefault(c["p_test"].lower(), []).append(c["p_value"])
        for fmt, chunks in _texts(r):
            for c in chunks:
                label = re.fullmatch(r"p \((.+)\)", c.head.strip())
                if not label:
                    continue
                test = label.group(1).lower()
                own = sorted(by_method.get(test, []))
                for p in numbers(c.text):
                    tol = 0.5 * 10.0 ** (-p.decimals) * (1 + 1e-9) + 1e-12
                    if not _near(own, p.value, tol):
                        others = [m for m, ps in by_method.items() if m != test and _near(sorted(ps), p.value, tol)]
                        problems.append(f"{r.name} {fmt}: column {c.head!r} prints {p.value:g}, a p of "
                                        f"{others or 'no comparison'}")
    assert not problems, "\n".join(problems[:40])


# A JSON key naming a figure that may be below zero: a difference, an overhead, a trend.
SIGNED = re.compile(r"overhead|diff|delta|change|slope|trend|ci\d|ratio|points|shape|offset|skew")
TIME_UNITS = {u for u, (dim, _) in UNITS.items() if dim == "s"}


def _share_of_one_cpu_or_ratio(path: str) -> bool:
    last = path.rsplit(".", 1)[-1]
    return (".cpu_usage[" in path or "per_cpu_percent" in path or "loss" in last or "steal" in last
            or "busy" in last or "foreign" in last)


def test_no_negative_time_or_share_no_share_above_100_percent_no_time_minimum_of_0(reports):
    problems = []
    for r in reports:
        for path, value, unit in _leaves(r.doc):
            signed = SIGNED.search(path.rsplit(".", 1)[-1]) or ".comparisons[" in path
            if unit in TIME_UNITS | {"%"} and value < 0 and not signed:
                problems.append(f"{r.name}: {path} = {value:g} {unit}, below zero")
            if unit == "%" and value > 100 + 1e-9 and _share_of_one_cpu_or_ratio(path):
                problems.append(f"{r.name}: {path} = {value:g} %, above 100 % of one CPU or of what was sent")
            if unit in TIME_UNITS and value == 0 and re.fullmatch(r"min_(ns|us|ms|s)", path.rsplit(".", 1)[-1]):
                problems.append(f"{r.name}: {path} = 0 {unit}, a time whose minimum cannot be 0")
        for fmt, chunks in _texts(r):
            for c in chunks:
                for m in re.finditer(rf"\bmin\b\W{{0,3}}0(?:\.0+)?\s?({'|'.join(TIME_UNITS)})\b", c.text):
                    problems.append(f"{r.name} {fmt}: {m.group(0)!r} in ...{c.text[:120]}...")
                is_min_column = re.match(r"min\b", c.head.strip(), re.IGNORECASE) and c.unit in TIME_UNITS
                if is_min_column and any(p.value == 0 for p in numbers(c.text)):
                    problems.append(f"{r.name} {fmt}: column {c.head!r} prints 0")
    assert not problems, f"{len(problems)} impossible figures:\n" + "\n".join(problems[:60])


def _sections(md: str) -> dict[str, str]:
    """Each benchmark's part of the Markdown report, by benchmark name."""
    parts = re.split(r"^## \d+\. Benchmark `([^`]+)`.*$", md, flags=re.MULTILINE)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def _description(section: str) -> str:
    m = re.search(r"^### \(\d+\.1\) Description\n(.*?)(?=^### )", section, flags=re.MULTILINE | re.DOTALL)
    return m.group(1).replace("\\", "") if m else ""


def test_a_benchmark_is_described_as_its_parameters_say(reports):
    """Its peer, its scheduling policy and its transports, as the resolved campaign has them."""
    problems = []
    for r in reports:
        sections = _sections(r.md)
        for name, bench in r.spec.benchmarks.items():
            section = sections.get(name, "")
            text = _description(section)
            say = f"{r.name}: benchmark {name}"
            if not text:
                problems.append(f"{say} has no description")
                continue
            policy = str(bench.params.get("policy") or "").lower()
            if policy == "other":
                for words in ("SCHED_FIFO", "SCHED_RR", "Real-time priority was", "real-time priority"):
                    if words.lower() in section.replace("\\", "").lower():
                        problems.append(f"{say} runs at policy other, its section says {words!r}")
            elif policy in ("fifo", "rr") and f"SCHED_{policy.upper()}" not in text:
                problems.append(f"{say} runs at policy {policy}, its description does not say SCHED_{policy.upper()}")
            peer = bench.params.get("peer")
            if peer:
                if f"`{peer}`" not in text and peer not in text:
                    problems.append(f"{say} has peer {peer}, its description does not name it")
                if "of this environment" in text or "two processes of" in text:
                    problems.append(f"{say} has peer {peer}, its description says both ends are in one environment: "
                                    f"{text.strip()[:200]}")
            transports = bench.params.get("transports") or ([bench.params["transport"]] if bench.params.get("transport") else [])
            for t in transports:
                if str(t) not in text:
                    problems.append(f"{say}: transport {t} is not in its description")
    assert not problems, "\n".join(problems[:40])


def test_a_count_of_one_is_said_in_the_singular(reports):
    """"1 periods were missed" or "1 period were missed" says a count it did not compute."""
    problems = []
    for r in reports:
        for fmt, chunks in _texts(r):
            for c in chunks:
                for m in re.finditer(r"(?<![\w.,])1 (?!in\b|of\b|out\b|per\b)[a-z]\w* (?:were|are|have)\b", c.text):
                    problems.append(f"{r.name} {fmt}: {m.group(0)!r} in ...{c.text[max(0, m.start() - 60):m.end() + 40]}...")
    assert not problems, "\n".join(problems[:40])
