"""`list` and `show` into a pipe (a CI log, `| less`, `> file`): every table at its full width, no
header cut to "kernel_rel…" and no value wrapped onto a second line, whatever the 80 columns Rich
assumes when stdout is not a terminal. Ground truth: the values written into the store."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.functional

FIXTURES = Path(__file__).resolve().parent / "fixtures"
REPO = FIXTURES.parent.parent

HOSTNAME = "build-runner-with-a-rather-long-name-" + "x" * 40
KERNEL = "6.18.44-rt12-custom-board-support-package-release-" + "9" * 30
CAMPAIGN = "nightly-regression-of-the-whole-board-family-" + "c" * 50


def _store(tmp_path: Path) -> str:
    """The old-store fixture's run, its campaign, hostname and kernel release each longer than 80
    columns on their own."""
    sql = (FIXTURES / "store-0003.sql").read_text(encoding="utf-8")
    sql = (sql.replace('"hostname": "vm"', f'"hostname": "{HOSTNAME}"')
              .replace('"kernel_release": "6.18.44-fc-v782"', f'"kernel_release": "{KERNEL}"')
              .replace("VALUES(1,'old-store',", f"VALUES(1,'{CAMPAIGN}',"))
    db = tmp_path / "s.db"
    with sqlite3.connect(db) as conn:
        conn.executescript(sql)
    return f"sqlite:///{db}"


def _piped(*args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE")}
    env["PYTHONPATH"] = str(REPO)
    r = subprocess.run([sys.executable, "-m", "rtvbench", *args], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, env=env, cwd=REPO, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_list_and_show_print_every_header_and_value_whole_into_a_pipe(tmp_path):
    url = _store(tmp_path)
    listed = _piped("--store", url, "list")
    shown = _piped("--store", url, "show", "1")
    assert "…" not in listed + shown
    assert "\x1b" not in listed + shown                        # no colour codes in a log either
    assert CAMPAIGN in listed and "Measurements ok" in listed and "8/8" in listed
    for header in ("hostname", "kernel_release", "preempt_model", "cpu_model", "cpus_online_count"):
        assert f" {header} " in shown, header
    [native] = [line for line in shown.splitlines() if HOSTNAME in line]
    assert KERNEL in native and len(native) > 80                # one line, wider than the old cut
    measurements = [line for line in shown.splitlines() if " wakeup " in line or " chase " in line]
    assert len(measurements) == 8 and all(" ok " in line for line in measurements)
