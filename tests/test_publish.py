"""`rtvbench publish`: the static site over a store of nightly runs with one planted step.

Ground truth: board_a's wake-up latency steps up at run STEP_RUN, board_b's never does. The step is
on the changes page and in the figure's view between the two runs where it was planted, board_b shows
none; every link of the site resolves to a file of it; publishing again rewrites nothing, and after
one more run only the pages that show it."""

from __future__ import annotations

import json
import re

import pytest

from history_store import STEP_RUN, add_run, history_store
from rtvbench.cli import main
from rtvbench.publish.site import anchor
from site_links import broken_links

pytestmark = pytest.mark.functional

RUNS = 12


def _publish(capsys, store: str, site) -> tuple[int, dict | str]:
    with pytest.raises(SystemExit) as exc:
        main(["publish", "-o", str(site), "--json", "--store", store])
    captured = capsys.readouterr()
    return exc.value.code, (json.loads(captured.out) if exc.value.code == 0 else captured.err)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return history_store(tmp_path_factory.mktemp("publish"), runs=RUNS)


def test_the_planted_step_is_on_the_changes_page_and_in_its_figure_and_the_flat_board_has_none(store, capsys,
                                                                                              tmp_path):
    code, done = _publish(capsys, store, tmp_path / "site")
    assert code == 0 and done["unchanged"] == [] and "index.html" in done["written"]
    site = tmp_path / "site"
    changes = (site / "changes.html").read_text()
    rows = re.findall(r'<tr class="change-point">(.*?)</tr>', changes, re.S)
    p50 = [r for r in rows if ">wakeup.p50_us<" in r]
    assert len(p50) == 1 and ">board_a<" in p50[0]
    assert f"#{STEP_RUN - 1}</a> &#8594; <a href=\"runs/{STEP_RUN}.html\">#{STEP_RUN}" in p50[0]
    assert f"rtvbench compare {STEP_RUN - 1} {STEP_RUN}" in p50[0]
    assert not any(">board_b<" in r for r in rows)
    figure = (site / "figures" / "wakeup.p50_us.html").read_text()
    a_start, b_start = figure.index(f'id="{anchor("board_a", "idle")}"'), figure.index(f'id="{anchor("board_b", "idle")}"')
    board_a, board_b = (figure[a_start:b_start], figure[b_start:]) if a_start < b_start else \
        (figure[a_start:], figure[b_start:a_start])
    assert board_a.count('class="change-point"') == 1 and board_a.count('<line class="change"') == 1
    assert f"change between #{STEP_RUN - 1} and #{STEP_RUN}" in board_a
    assert 'class="no-change"' in board_b and 'class="change' not in board_b.replace('class="no-change"', "")
    # The runs' tags reach the history tables and each run has its report.
    assert "kernel=6.3" in figure and all((site / "runs" / f"{i}.html").is_file() for i in range(1, RUNS + 1))
    assert broken_links(site) == []


def test_publishing_again_rewrites_only_what_a_new_run_changes(store, capsys, tmp_path):
    site = tmp_path / "site"
    code, first = _publish(capsys, store, site)
    assert code == 0
    mtimes = {p: p.stat().st_mtime_ns for p in site.rglob("*.html")}
    code, again = _publish(capsys, store, site)
    assert code == 0 and again["written"] == [] and sorted(again["unchanged"]) == sorted(first["written"])
    assert {p: p.stat().st_mtime_ns for p in site.rglob("*.html")} == mtimes

    from rtvbench.store import open_store
    new = add_run(open_store(store), RUNS + 1)
    code, after = _publish(capsys, store, site)
    written = set(after["written"])
    figures = {p for p in first["written"] if p.startswith("figures/")}
    # The new run's report, the index that lists it, and every figure page (each gains its point); the
    # changes page only when its medians moved. No other run's report.
    assert {f"runs/{new}.html", "index.html"} | figures <= written <= {f"runs/{new}.html", "index.html",
                                                                        "changes.html"} | figures
    assert all(site.joinpath(p).stat().st_mtime_ns == mtimes[site / p] for p in after["unchanged"])
    assert broken_links(site) == []


def test_a_file_for_a_site_and_an_empty_store_are_refused_in_one_sentence(store, capsys, tmp_path):
    (tmp_path / "file").write_text("x")
    code, text = _publish(capsys, store, tmp_path / "file")
    assert code == 2 and "is a file" in text and "Traceback" not in text
    code, text = _publish(capsys, f"sqlite:///{tmp_path}/empty.db", tmp_path / "site")
    assert code == 2 and "no run to publish" in text


def test_the_link_check_catches_a_dangling_link_and_a_missing_anchor(tmp_path):
    (tmp_path / "a.html").write_text('<a href="b.html#x">b</a><a href="c.html">c</a><a href="https://cdn/x.js">x</a>')
    (tmp_path / "b.html").write_text('<p id="y"></p>')
    assert sorted(broken_links(tmp_path)) == ["a.html: b.html#x (no such anchor)", "a.html: c.html",
                                             "a.html: https://cdn/x.js leaves the site"]
