"""The HTML report in a real browser: it loads without console errors and shows the summary table."""

from __future__ import annotations

import pytest
from chromium import chromium as _chromium, console_lines as _console_lines
from synthetic_runs import HOSTILE_ENV, hostile_run, typical_run

from rtvbench.report import render

pytestmark = [pytest.mark.browser, pytest.mark.functional]


def test_console_error_detection_works(tmp_path):
    # Guards the tests below: a page with a script error must be caught by the same check.
    page = tmp_path / "broken.html"
    page.write_text('<!DOCTYPE html><html><head><link rel="icon" href="data:,"></head>'
                    "<body><script>no_such_function();</script></body></html>")
    proc = _chromium(tmp_path, page, "--dump-dom")
    assert any("Uncaught" in line for line in _console_lines(proc.stderr)), proc.stderr[-2000:]


@pytest.mark.parametrize("make_run", [typical_run, hostile_run], ids=["typical", "hostile"])
def test_report_loads_without_console_errors_and_shows_summary(tmp_path, make_run):
    page = tmp_path / "report.html"
    page.write_text(render(make_run(), "html"), encoding="utf-8")

    proc = _chromium(tmp_path, page, "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert _console_lines(proc.stderr) == []
    dom = proc.stdout
    assert 'id="summary-table"' in dom and "Key results" in dom and "Requirement verdicts" in dom
    summary = dom[dom.index('id="summary-table"'):]
    summary = summary[:summary.index("</table>")]
    assert summary.count("<tr") >= 5                  # header + 4 environment/load rows
    assert "<script" not in dom and "<img" not in dom   # nothing a name smuggled in became an element
    if make_run is hostile_run:
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in summary and HOSTILE_ENV not in dom

    shot = tmp_path / "shot.png"
    proc = _chromium(tmp_path, page, "--window-size=1280,1400", f"--screenshot={shot}")
    assert proc.returncode == 0 and shot.stat().st_size > 10_000
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    import numpy as np
    from PIL import Image    # pillow comes with matplotlib

    pixels = np.asarray(Image.open(shot).convert("RGB")).reshape(-1, 3)
    colours = {tuple(int(x) for x in c) for c in np.unique(pixels, axis=0)}
    # The first screen shows the verdict table: its coloured PASS/FAIL badges are on it.
    if make_run is typical_run:
        assert (0xD5, 0xF2, 0xDC) in colours and (0xFA, 0xDA, 0xDD) in colours
    else:
        assert (0xD5, 0xF2, 0xDC) in colours
