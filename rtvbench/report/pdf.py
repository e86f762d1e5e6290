"""The report as PDF: the HTML report printed by headless Chromium.

The page layout (A4 landscape, page breaks, repeated table headers) is the HTML template's print
stylesheet, so paper from a browser's print dialog and this PDF look the same. Chromium is the one
already installed for the report tests (scripts/setup.sh): no PDF library to keep in step with the HTML.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

from rtvbench import run_files
from rtvbench.analysis.evaluation import Evaluation
from rtvbench.errors import TargetError
from rtvbench.report.html import render_html

BROWSER = "chromium"
#: a report of a few hundred pages prints in seconds; a browser still busy after this is stuck
TIMEOUT_S = 120
_FIX = "install chromium (make setup does) or choose --format html"
# Nothing the report needs comes from the network (it is one self-contained file): no update checks,
# sync or GPU process, a throw-away profile, and no date and file URL printed on every page. No
# sandbox: it needs user namespaces or root-less operation, which a CI container lacks, and the page
# is our own, without script, every user-supplied name escaped.
_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
          "--disable-background-networking", "--disable-component-update", "--disable-sync",
          "--no-pdf-header-footer")


def render_pdf(ev: Evaluation, with_plots: bool = True) -> bytes:
    browser = shutil.which(BROWSER)
    if browser is None:
        raise TargetError(f"--format pdf prints the report with {BROWSER}, which is not on the PATH; {_FIX}.")
    html = render_html(ev, with_plots)
    # The whole report and the browser's profile: private, and swept by the next command if we are killed.
    with run_files.temporary_dir("rtvbench-pdf-") as tmp:
        page, pdf = Path(tmp) / "report.html", Path(tmp) / "report.pdf"
        page.write_text(html, encoding="utf-8")
        argv = [browser, *_FLAGS, f"--user-data-dir={Path(tmp) / 'profile'}", f"--print-to-pdf={pdf}",
                page.as_uri()]
        returncode, stderr = _run(argv)
        data = pdf.read_bytes() if pdf.exists() else b""
    # Whole or nothing: a PDF cut short (a browser killed while writing) ends without its trailer.
    if returncode != 0 or not data.startswith(b"%PDF-") or not data.rstrip().endswith(b"%%EOF"):
        raise TargetError(f"{BROWSER} could not print the report to PDF ({_reason(returncode, stderr)}); {_FIX}.")
    return data


def _run(argv: list[str]) -> tuple[int | None, str]:
    """Chromium's exit status (None when it timed out) and its stderr."""
    try:
        # Its own session: on a timeout the whole browser (renderer, GPU and zygote processes) is ended.
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True, errors="replace", start_new_session=True)
    except OSError as e:
        raise TargetError(f"{BROWSER} could not be started ({e.strerror}); {_FIX}.") from None
    try:
        _, stderr = proc.communicate(timeout=TIMEOUT_S)
        return proc.returncode, stderr
    except subprocess.TimeoutExpired:
        return None, ""
    finally:
        if proc.poll() is None:       # timed out, or the user interrupted: no browser outlives the command
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()


def _reason(returncode: int | None, stderr: str) -> str:
    if returncode is None:
        return f"no PDF after {TIMEOUT_S} s"
    # Chromium logs harmless complaints (no D-Bus, no GPU) on every start: its last line that is not
    # one of those is the likeliest reason.
    lines = [ln.strip() for ln in stderr.splitlines()
             if ln.strip() and "dbus" not in ln.lower() and "bytes written to file" not in ln]
    detail = lines[-1][:200] if lines else "no output"
    if returncode < 0:
        return f"killed by signal {-returncode}: {detail}"
    return f"exit status {returncode}: {detail}" if returncode else f"no complete PDF written: {detail}"
