"""The target side of streamed loads: every line a load prints while it is stopped reaches the
store before stop() returns, a failing consumer never blocks the load, files are read through
the target (also by the generic `cat` fallback of ssh/qemu-style targets), and what a killed
io load leaves behind is removed."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time

from rtvbench.loads.base import LoadSite
from rtvbench.loads.io.params import IoLoad, IoLoadParams
from rtvbench.loads.probe_load import _ProbeLoadBackground
from rtvbench.probe.stream import ProbeStream
from rtvbench.procstat import parse_proc_stat
from rtvbench.targets.base import Background, Target
from rtvbench.targets.local import LocalTarget

# Prints a line, then on SIGTERM three more (like a load's last window, result and end).
TALKER = ["sh", "-c", 'trap "echo window; echo result; echo end; exit 0" TERM; echo meta; '
                      "while :; do sleep 0.02; done"]


def test_last_lines_are_delivered_before_stop_returns():
    lines: list[str] = []
    started = threading.Event()

    def slow_consumer(line: str) -> None:
        started.set()
        time.sleep(0.3)             # a store that is slow to commit
        lines.append(line)

    bg = LocalTarget("native", None).start_background(TALKER, slow_consumer)
    assert started.wait(5)
    bg.stop()
    assert lines == ["meta", "window", "result", "end"]
    assert bg.failure() is None and bg.poll() is not None


def test_a_command_alone_runs_without_the_supervisor_and_stops_the_same_way():
    lines: list[str] = []
    bg = LocalTarget("native", None).start_background(TALKER, lines.append, alone=True)
    assert bg._proc.args == TALKER                  # no Python supervisor in between
    deadline = time.monotonic() + 10
    while not lines and time.monotonic() < deadline:
        time.sleep(0.01)
    bg.stop()
    assert lines == ["meta", "window", "result", "end"]
    assert bg.poll() == 0 and bg.failure() is None


def test_a_command_alone_that_ignores_sigterm_is_killed():
    stubborn = [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                                      "print('ready', flush=True); time.sleep(60)"]
    lines: list[str] = []
    bg = LocalTarget("native", None).start_background(stubborn, lines.append, alone=True)
    deadline = time.monotonic() + 10
    while not lines and time.monotonic() < deadline:
        time.sleep(0.01)
    started = time.monotonic()
    bg.stop()
    assert bg.poll() == -signal.SIGKILL and lines == ["ready"]
    assert time.monotonic() - started < 50          # a hang guard: the grace is 2 s, its sleep 60 s


def test_a_failing_consumer_is_reported_and_never_blocks_the_load():
    many = ["sh", "-c", "i=0; while [ $i -lt 20000 ]; do echo line$i; i=$((i+1)); done; sleep 30"]
    seen = []

    def broken(line: str) -> None:
        seen.append(line)
        raise ValueError("the store is full")

    bg = LocalTarget("native", None).start_background(many, broken)
    try:
        # 20 000 lines overflow a pipe many times over: only a reader that keeps draining lets
        # the command reach its `sleep`.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and bg.poll() is None and not _sleeping(bg):
            time.sleep(0.05)
        assert _sleeping(bg)
        assert bg.failure() == "the store is full" and seen == ["line0"]
    finally:
        bg.stop()


def _sleeping(bg) -> bool:
    """Whether the command of bg reached its final `sleep` (in the supervisor's process group)."""
    out = subprocess.run(["pgrep", "-f", "-g", str(bg._proc.pid), "^sleep 30$"], capture_output=True, text=True)
    return bool(out.stdout.strip())


def test_proc_stat_is_read_through_the_target_also_by_the_generic_fallback():
    local = LocalTarget("native", None)
    direct = parse_proc_stat(local.read_file("/proc/stat"))
    via_cat = parse_proc_stat(Target.read_file(local, "/proc/stat"))    # what an ssh target inherits
    assert set(direct) == set(via_cat) and "cpu" in direct and "cpu0" in direct
    assert set(direct["cpu0"]) >= {"user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"}
    assert via_cat["cpu"]["user"] >= direct["cpu"]["user"]          # counters only grow


class _Ended(Background):
    argv = ["rtvb-probe", "load"]

    def poll(self):
        return 0

    def stop(self):
        pass

    def output_tail(self):
        return ""


def test_a_killed_io_loads_directory_is_removed_by_the_host(tmp_path):
    local = LocalTarget("native", None)
    after_kill = IoLoad("io", IoLoadParams()).after_kill
    for ended, kept in ((False, False), (True, True)):
        made = tmp_path / "rtvb-load-abc123"
        made.mkdir()
        (made / "worker-0.dat").write_bytes(b"x" * 100)
        stream = ProbeStream("load")
        stream.feed(json.dumps({"type": "meta", "schema": 1, "params": {"kind": "io", "dir": str(made)}}))
        if ended:   # the probe ended normally: what is left there is someone else's (dir_not_removed)
            stream.feed(json.dumps({"type": "end", "status": "interrupted", "elapsed_ns": 1}))
        _ProbeLoadBackground(_Ended(), stream, LoadSite("native", local, "rtvb-probe"), after_kill).stop()
        assert made.exists() is kept
        if kept:
            (made / "worker-0.dat").unlink()
            made.rmdir()
    # Never anything but the load's own directory.
    other = tmp_path / "data"
    other.mkdir()
    stream = ProbeStream("load")
    stream.feed(json.dumps({"type": "meta", "schema": 1, "params": {"kind": "io", "dir": str(other)}}))
    _ProbeLoadBackground(_Ended(), stream, LoadSite("native", local, "rtvb-probe"), after_kill).stop()
    assert other.exists()
