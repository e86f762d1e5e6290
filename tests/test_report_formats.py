"""The four report formats: content, numbers that agree across formats, and escaping."""

from __future__ import annotations

import csv
import io
import json
import re

import numpy as np
import pytest
from synthetic_runs import HOSTILE_COMMAND, HOSTILE_ENV, HOSTILE_HOST, HOSTILE_LOAD, hostile_run, typical_run

from rtvbench.analysis.compare import ratio_test
from rtvbench.analysis.dataset import RunData
from rtvbench.units import format_percent
from rtvbench.report import render


@pytest.fixture(scope="module")
def run():
    return typical_run()


@pytest.fixture(scope="module")
def outputs(run):
    return {fmt: render(run, fmt) for fmt in ("html", "md", "csv", "json")}


def _expected_overhead(run, figure="p99_us", load="idle"):
    data = RunData(run)
    return ratio_test(data.values("native", load, "wakeup", figure), data.values("guest", load, "wakeup", figure))


def test_html_has_summary_verdicts_comparisons_and_plots(run, outputs):
    html = outputs["html"]
    assert html.startswith("<!DOCTYPE html>")
    verdicts = html[html.index('id="verdicts"'):html.index("</table>", html.index('id="verdicts"'))]
    assert [s for s in re.findall(r'<tr class="(pass|fail|inconclusive)"', verdicts)] == \
        ["pass", "fail", "inconclusive", "fail"]
    assert 'id="summary-table"' in html and "Key results" in html
    t = _expected_overhead(run)
    lo, hi = t.ci_percent
    assert f"{format_percent(t.overhead_percent)}</td>" in html
    assert f"{format_percent(lo)} .. {format_percent(hi)}" in html
    for section in ("Description", "Precondition", "How to measure", "Result", "Consideration"):
        assert section in html
    # histogram, CCDF, window maxima; and a latency plot per CPU for each of the 4 cells
    assert html.count("<svg") == 3 + 4 and html.count("latency per CPU") >= 4
    assert "<?xml" not in html and "<!DOCTYPE svg" not in html
    ids = re.findall(r' id="([^"]+)"', html)
    assert len(ids) == len(set(ids)), "element ids must be unique across the inline SVGs"
    assert "<script" not in html and "src=\"http" not in html and "href=\"http" not in html
    assert "cannot open /dev/cpu_dma_latency" in html          # the failed repetition's error
    assert render(run, "html") == html                          # same data, same report


def test_html_per_repetition_table_has_ave_min_max_rows(run, outputs):
    html = outputs["html"]
    data = RunData(run)
    maxima = data.values("native", "idle", "wakeup", "max_us")
    start = html.index("wakeup: <code>native</code> under <code>idle</code>")
    table = html[start:html.index("</table>", start)]
    foot = table[table.index("<tfoot>"):]
    assert re.search(r"<td>Ave</td>.*?</tr>", foot, re.S)
    max_row = re.search(r"<td>Max</td>(.*?)</tr>", foot, re.S).group(1)
    assert f"{max(maxima):.3g}" in max_row
    assert len(re.findall(r"<tr>\s*<td>\d+</td>", table)) == 5


def test_hostile_names_are_escaped_everywhere(tmp_path):
    run = hostile_run()
    html = render(run, "html")
    assert "<script" not in html and "<img" not in html and "<b>" not in html and "<i>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(2)&gt;" in html
    assert "&lt;/pre&gt;&lt;script&gt;alert(3)&lt;/script&gt;" in html
    assert "&lt;b&gt;bold-host&lt;/b&gt;" in html
    md = render(run, "md")
    # Inside code spans and fences Markdown shows "<" literally, so only the text outside them must be escaped.
    prose = re.sub(r"(`{3,})\n.*?\n\1", "", md, flags=re.S)
    prose = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", prose)
    assert "<script" not in prose and "<img" not in prose and "<b>" not in prose and "<i>" not in prose
    assert "&lt;i&gt;refused&lt;/i&gt;" in prose and HOSTILE_COMMAND in md
    doc = json.loads(render(run, "json"))
    assert HOSTILE_ENV in doc["environments"] and HOSTILE_LOAD in doc["loads"]
    assert any(HOSTILE_COMMAND in m["load_commands"] for m in doc["measurements"])
    rows = list(csv.DictReader(io.StringIO(render(run, "csv"))))
    assert {r["environment"] for r in rows} == {"native", HOSTILE_ENV}
    assert HOSTILE_HOST not in md


def test_csv_is_long_format_and_agrees_with_json(run, outputs):
    rows = list(csv.DictReader(io.StringIO(outputs["csv"])))
    assert list(rows[0]) == ["run_id", "campaign", "environment", "load", "benchmark", "kind", "repetition",
                             "status", "figure", "value", "unit"]
    doc = json.loads(outputs["json"])
    from_json = {(m["environment"], m["load"], m["repetition"], f): v
                 for m in doc["measurements"] for f, v in m["figures"].items()}
    from_csv = {(r["environment"], r["load"], int(r["repetition"]), r["figure"]): float(r["value"])
                for r in rows if r["figure"]}
    assert from_csv.keys() == from_json.keys()
    assert all(from_csv[k] == pytest.approx(from_json[k], rel=1e-12) for k in from_csv)
    failed = [r for r in rows if r["status"] == "error"]
    assert len(failed) == 1 and failed[0]["figure"] == "" and failed[0]["value"] == ""
    units = {r["figure"]: r["unit"] for r in rows if r["figure"]}
    assert units["max_us"] == "us" and units["p99_ns"] == "ns" and units["over_100us"] == "count"
    # one row per (measurement, figure): 19 measurements with figures plus the failed one
    assert len(rows) == len(from_json) + 1


def test_json_holds_summaries_comparisons_and_verdicts(run, outputs):
    doc = json.loads(outputs["json"])
    assert [v["status"] for v in doc["verdicts"]] == ["PASS", "FAIL", "INCONCLUSIVE", "FAIL"]
    t = _expected_overhead(run)
    [c] = [c for c in doc["comparisons"] if c["figure"] == "p99_us" and c["axis"] == "environment"
           and c["baseline"]["load"] == "idle"]
    assert c["overhead_percent"] == pytest.approx(t.overhead_percent)
    assert c["ci95_percent"] == pytest.approx(list(t.ci_percent))
    assert c["p_value"] == pytest.approx(t.p_value) and c["verdict"] == t.verdict == "significant"
    data = RunData(run)
    [s] = [s for s in doc["summaries"] if (s["environment"], s["load"], s["figure"]) == ("guest", "stress", "max_us")]
    values = data.values("guest", "stress", "wakeup", "max_us")
    assert s["n"] == 4 and s["values"] == pytest.approx(values) and s["max"] == pytest.approx(max(values))
    assert isinstance(s["median"], float)
    assert any("no_rt_policy" in f["text"] for f in doc["findings"]["wakeup"])
    assert outputs["json"] == json.dumps(doc, sort_keys=True, indent=2) + "\n"     # sorted keys


def test_markdown_tables_carry_the_same_figures(run, outputs):
    md = outputs["md"]
    doc = json.loads(outputs["json"])
    verdict_rows = [line for line in md.splitlines() if re.match(r"\| \d+ \| wakeup", line)
                    or re.match(r"\| \d+ \| overhead", line)]
    assert [row.split(" | ")[2] for row in verdict_rows] == [v["status"] for v in doc["verdicts"]]
    t = _expected_overhead(run)
    assert format_percent(t.overhead_percent) in md.replace("\\", "")
    # every completed repetition's max appears in its row of the per-repetition table
    for m in doc["measurements"]:
        if m["status"] == "ok" and (m["environment"], m["load"]) == ("native", "idle"):
            assert re.search(rf"\| {m['repetition']} \| ok \|.*\| {m['figures']['max_us']:.3g} \|", md)
    assert "<svg" not in md and "| **Ave** |" in md


def test_unknown_format_is_refused(run):
    with pytest.raises(ValueError, match="unknown report format"):
        render(run, "docx")


def test_key_results_of_latency_have_their_own_columns_with_the_medians(run, outputs):
    md = outputs["md"]
    head = "| Benchmark | Environment | Load | Runs ok | avg | p99 | p99.99 | max | worst max |"
    assert md.count("**Key results of the") == 1 and head in md
    doc = json.loads(outputs["json"])
    s = {(x["environment"], x["load"], x["figure"]): x for x in doc["summaries"]}
    row = next(line for line in md.splitlines() if line.startswith("| wakeup | guest | idle | 5/5 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    from rtvbench.units import format_value
    assert cells[4:] == [format_value(s[("guest", "idle", f)]["median"], "us") for f in ("avg_us", "p99_us",
                                                                                            "p9999_us", "max_us")] \
        + [format_value(s[("guest", "idle", "max_us")]["max"], "us")]


def test_each_warning_is_said_in_full_once_and_pointed_at_from_the_summary(outputs):
    md = outputs["md"]
    summary = md[md.index("**Warnings**"):md.index("## 2. Environments")]
    assert summary.strip().splitlines()[2:] == [
        "- `wakeup`: 3 warnings (deadlines exceeded, the probe's warnings, failed or interrupted measurements), "
        "said in full in its Consideration (3.5)."]
    for text in ("The 100 us deadline was exceeded by", "The probe warned `no_rt_policy` in `guest` under `idle` "
                 "(5 of 5 measurements)", "Repetition 3 in `guest` under `stress` failed"):
        assert md.count(text) == 1, text
    consideration = md[md.index("### (3.5) Consideration"):]
    assert consideration.count("- ⚠ ") == 3


def test_many_histograms_are_small_multiples_on_shared_axes_and_few_are_overlaid():
    from rtvbench.analysis.histogram import Histogram
    from rtvbench.report.plots import MAX_OVERLAY, histogram_figure
    from synthetic_runs import histogram_record, lognormal_latency
    rng = np.random.default_rng(5)
    hists = [(f"env{i} / load{i}", Histogram.from_record(histogram_record(lognormal_latency(2_000 * (1 + i))(rng, 3000))))
             for i in range(15)]
    fig = histogram_figure(hists, "t")
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert len(panels) == 15 and [ax.get_title() for ax in panels] == [n for n, _ in hists]
    assert len({ax.get_xlim() for ax in panels}) == 1                  # one latency axis to compare on
    for ax, (_, h) in zip(panels, hists):
        [steps] = ax.patches
        assert steps.get_data().values.sum() == h.total                # each panel its own cell's samples
    few = histogram_figure(hists[:MAX_OVERLAY], "t")
    [ax] = few.axes
    colours = [p.get_edgecolor() for p in ax.patches]
    assert len(colours) == MAX_OVERLAY and len({tuple(c) for c in colours}) == MAX_OVERLAY


def test_a_plot_of_more_curves_than_it_draws_keeps_the_longest_tails_and_says_so():
    from rtvbench.analysis.histogram import Histogram
    from rtvbench.report.plots import MAX_CURVES, histogram_figure
    from synthetic_runs import histogram_record, lognormal_latency
    rng = np.random.default_rng(7)
    # Thread i's latencies scale with (i * 7) % 40: the longest tails are not the last threads.
    hists = [(f"thread {i}", Histogram.from_record(histogram_record(lognormal_latency(1_000 * (1 + (i * 7) % 40))(rng, 500))))
             for i in range(40)]
    fig = histogram_figure(hists, "t")
    panels = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    longest = sorted(hists, key=lambda c: c[1].highest(), reverse=True)[:MAX_CURVES]
    assert panels == [n for n, _ in hists if n in {name for name, _ in longest}]
    assert fig._suptitle.get_text() == f"t — the {MAX_CURVES} of 40 with the longest tails"
