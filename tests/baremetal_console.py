"""The bare-metal images' UART on QEMU's stdio, driven as the host drives an agent (docs/baremetal.md):
`run` requests with hex arguments, `<id> out` records, `<id> err` and `<id> exit` lines, `log` lines
for what it cannot read, `tick` lines skipped. Shared by the tests of each architecture's image."""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BOOT_TIMEOUT_S = 30


def build_images(*tools: str) -> None:
    """`make baremetal`, or a skip naming the first tool it needs that is missing."""
    for tool in tools:
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed (scripts/setup.sh installs it)")
    subprocess.run(["make", "-s", "-C", str(REPO), "baremetal"], check=True)


class Console:
    """The image's UART on QEMU's stdio: lines in a queue, requests written as lines."""

    def __init__(self, qemu_command: list[str]) -> None:
        self.proc = subprocess.Popen(qemu_command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 1

    def _read(self) -> None:
        for raw in self.proc.stdout:
            self.lines.put(raw.decode(errors="replace").rstrip("\r\n"))
        self.lines.put(None)

    def line(self, deadline: float) -> str:
        """The next line but ticks; fails the test at the deadline or when QEMU ends."""
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail("the image said nothing more before the deadline")
            assert line is not None, "QEMU ended"
            if not line.startswith("tick "):
                return line

    def send(self, line: str) -> None:
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def run(self, *args: str, timeout_s: float = 30) -> tuple[list[dict], list[str], int]:
        """A command's records, its err lines and its exit status."""
        cid = str(self.next_id)
        self.next_id += 1
        self.send(f"run {cid} " + " ".join(a.encode().hex() or "-" for a in args))
        records, errors = [], []
        deadline = time.monotonic() + timeout_s
        while True:
            line = self.line(deadline)
            ident, _, rest = line.partition(" ")
            assert ident == cid, line
            kind, _, text = rest.partition(" ")
            if kind == "out":
                records.append(json.loads(text))
            elif kind == "err":
                errors.append(text)
            else:
                assert kind == "exit", line
                return records, errors, int(text)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)

    def wait_ready(self) -> str:
        """The image's `ready` line, sent once it has booted."""
        return self.line(time.monotonic() + BOOT_TIMEOUT_S)

