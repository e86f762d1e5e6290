"""Debian's headless Chromium driven from the tests: load a page, read its DOM, screenshot, and the
console messages it logged (a page's script errors among them)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# Chromium logs every console message as "...:CONSOLE(line)] ..." or "...:CONSOLE:line] ..." on stderr.
CONSOLE = re.compile(r":CONSOLE[(:]|Uncaught")


def chromium(tmp: Path, page: Path, *action: str) -> subprocess.CompletedProcess:
    assert Path(CHROMIUM).exists(), "Debian's chromium is needed for the browser tests (scripts/setup.sh installs it)"
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
                           *action, page.as_uri()], capture_output=True, text=True, timeout=90)


def console_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if CONSOLE.search(line)]
