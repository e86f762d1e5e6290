"""The published site in a real browser: its pages load from file:// without console errors, the
planted step is on the changes page and in its figure's view, the flat board shows none."""

from __future__ import annotations

import pytest
from chromium import chromium, console_lines
from history_store import STEP_RUN, history_store

from rtvbench.cli import main
from rtvbench.publish.site import anchor

pytestmark = [pytest.mark.browser, pytest.mark.functional]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("site")
    store = history_store(tmp, runs=12)
    with pytest.raises(SystemExit) as exc:
        main(["publish", "-o", str(tmp / "site"), "--no-plots", "--store", store])
    assert exc.value.code == 0
    return tmp / "site"


def _dom(tmp_path, page) -> str:
    proc = chromium(tmp_path, page, "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert console_lines(proc.stderr) == []
    return proc.stdout


def test_the_site_loads_and_shows_the_planted_step_where_it_was_planted(site, tmp_path):
    index = _dom(tmp_path, site / "index.html")
    assert 'href="figures/wakeup.p50_us.html"' in index and 'href="runs/12.html"' in index
    changes = _dom(tmp_path, site / "changes.html")
    (row,) = [r for r in changes.split("<tr")[1:] if ">wakeup.p50_us<" in r]
    assert "board_a" in row and f">#{STEP_RUN - 1}</a>" in row and f">#{STEP_RUN}</a>" in row
    assert f"rtvbench compare {STEP_RUN - 1} {STEP_RUN}" in row and "board_b" not in changes
    figure = _dom(tmp_path, site / "figures" / "wakeup.p50_us.html")
    a, b = figure.index(f'id="{anchor("board_a", "idle")}"'), figure.index(f'id="{anchor("board_b", "idle")}"')
    board_a, board_b = (figure[a:b], figure[b:]) if a < b else (figure[a:], figure[b:a])
    assert '<line class="change"' in board_a and "<svg" in board_a
    assert '<line class="change"' not in board_b and 'class="no-change"' in board_b
    assert "<script" not in index + changes + figure
    _dom(tmp_path, site / "runs" / f"{STEP_RUN}.html")
