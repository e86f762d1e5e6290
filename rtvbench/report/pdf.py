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
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from rtvbench import run_files
from rtvbench.analysis.evaluation import Evaluation
from rtvbench.errors import TargetError
from rtvbench.report.html import render_html
from rtvbench.report.page_server import PageServer

BROWSER = "chromium"
#: a report of a few hundred pages prints in seconds; a browser still busy after this is stuck
TIMEOUT_S = 120
_FIX = "install chromium (make setup does) or choose --format html"
#: what the browser logs once the PDF is on disk
_WRITTEN = b"bytes written to file"
# Nothing the report needs comes from the network (it is one self-contained page, served over
# loopback): no update checks, sync or GPU process, a throw-away profile, and no date and URL printed
# on every page. No
# sandbox: it needs user namespaces or root-less operation, which a CI container lacks, and the page
# is our own, without script, every user-supplied name escaped.
_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
          "--disable-background-networking", "--disable-component-update", "--disable-sync",
          "--no-pdf-header-footer")


def render_pdf(ev: Evaluation, with_plots: bool = True) -> bytes:
    browser = shutil.which(BROWSER)
    if browser is None:
        raise TargetError(f"--format pdf prints the report with {BROWSER}, which is not on the PATH; {_FIX}.")
    deadline = time.monotonic() + TIMEOUT_S
    # The browser's profile, its log and the PDF: private, and swept by the next command if we are killed.
    with run_files.temporary_dir("rtvbench-pdf-") as tmp:
        pdf, log = Path(tmp) / "report.pdf", Path(tmp) / "browser.log"
        server = PageServer()
        try:
            argv = [browser, *_FLAGS, f"--user-data-dir={Path(tmp) / 'profile'}", f"--print-to-pdf={pdf}",
                    server.url]
            # The browser starts while the page is drawn, and asks for it (page_server.py).
            with _browser(argv, log) as proc:
                page = render_html(ev, with_plots).encode("utf-8")
                server.serve(page, deadline, lambda: proc.poll() is None)
                server.close()
                returncode = _wait(proc, log, deadline)
        finally:
            server.close()
        stderr = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
        data = pdf.read_bytes() if pdf.exists() else b""
    # Whole or nothing: a PDF cut short (a browser killed while writing) ends without its trailer.
    if returncode != 0 or not data.startswith(b"%PDF-") or not data.rstrip().endswith(b"%%EOF"):
        raise TargetError(f"{BROWSER} could not print the report to PDF ({_reason(returncode, stderr)}); {_FIX}.")
    return data


@contextmanager
def _browser(argv: list[str], log: Path) -> Iterator[subprocess.Popen]:
    """The browser, its stderr to `log` (a file: a pipe nobody reads while the page is drawn could fill
    and stall it); on the way out no browser outlives the command (a timeout, an interruption)."""
    try:
        with open(log, "wb") as err:
            # Its own session: on a timeout the whole browser (renderer, GPU and zygote processes) is ended.
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                    start_new_session=True)
    except OSError as e:
        raise TargetError(f"{BROWSER} could not be started ({e.strerror}); {_FIX}.") from None
    try:
        yield proc
    finally:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()


def _wait(proc: subprocess.Popen, log: Path, deadline: float) -> int | None:
    """The browser's exit status, None when it is still running at the deadline; 0 as soon as it has
    logged that the PDF is written (it writes the file, then says so): its shutdown, another 60 to 90
    ms of its processes ending, is then of no use to us, and the caller's exit ends them."""
    while time.monotonic() < deadline:
        try:
            return proc.wait(timeout=0.01)
        except subprocess.TimeoutExpired:
            if _WRITTEN in log.read_bytes():
                return 0
    return None


def _reason(returncode: int | None, stderr: str) -> str:
    if returncode is None:
        return f"no PDF after {TIMEOUT_S} s"
    # Chromium logs harmless complaints (no D-Bus, no GPU) on every start: its last line that is not
    # one of those is the likeliest reason.
    lines = [ln.strip() for ln in stderr.splitlines()
             if ln.strip() and "dbus" not in ln.lower() and _WRITTEN.decode() not in ln]
    detail = lines[-1][:200] if lines else "no output"
    if returncode < 0:
        return f"killed by signal {-returncode}: {detail}"
    return f"exit status {returncode}: {detail}" if returncode else f"no complete PDF written: {detail}"
