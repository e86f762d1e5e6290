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
        return self.finish(self.start(*args), timeout_s)

    def start(self, *args: str) -> str:
        """Sends the command; its id."""
        cid = str(self.next_id)
        self.next_id += 1
        self.send(f"run {cid} " + " ".join(a.encode().hex() or "-" for a in args))
        return cid

    def finish(self, cid: str, timeout_s: float = 30, logs: list[str] | None = None) -> tuple[list[dict], list[str], int]:
        """The records, err lines and exit status of command `cid`; `log` lines go to `logs` when given."""
        records, errors = [], []
        deadline = time.monotonic() + timeout_s
        while True:
            line = self.line(deadline)
            ident, _, rest = line.partition(" ")
            if logs is not None and ident == "log":
                logs.append(rest)
                continue
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



def check_ready(line: str) -> None:
    """`ready <probe-version> <boot-ns>`, the boot time read from the image's counter."""
    word, version, boot_ns = line.split(" ")
    assert (word, version) == ("ready", "0.1.0")
    assert int(boot_ns) > 0


def latency_result(records: list[dict], **entry) -> dict:
    """The framing every `latency` run has, and its one CPU's result (the same figures as the "all" one);
    `entry` holds the meta record's keys of how the image was entered."""
    assert [r["type"] for r in records] == ["meta", "result", "result", "end"], records
    meta = records[0]
    assert meta["platform"] == "baremetal" and meta["subcommand"] == "latency"
    assert {k: meta[k] for k in entry} == entry
    assert records[-1]["status"] == "ok"
    one, everything = records[1], records[2]
    assert (one["cpu"], everything["cpu"]) == (0, "all")
    assert {k: v for k, v in one.items() if k != "cpu"} == {k: v for k, v in everything.items() if k != "cpu"}
    return one


def check_one_second_of_1ms_deadlines(records: list[dict], r: dict) -> None:
    """Every activation counted, and the host's latency decoder reads the image's result as it reads the
    Linux probe's."""
    assert r["activations"] == 1000
    assert r["count"] + r["missed"] == r["activations"]
    assert r["count"] == sum(b[2] for b in r["histogram"]["buckets"]) > 0
    assert r["min_ns"] <= r["p50_ns"] <= r["p99_ns"] <= r["max_ns"]
    assert records[-1]["elapsed_ns"] >= 1_000_000_000
    from rtvbench.analysis.histogram import result_histogram
    from rtvbench.kinds.latency.decode import LatencyKind
    figures = LatencyKind()._result_figures(records[2])
    assert (figures["count"], figures["missed"], figures["max_us"]) == (r["count"], r["missed"], r["max_ns"] / 1000)
    assert result_histogram(records[2]).total == r["count"]


STALL_US = 40000
STALL_RUN = ("latency", "--interval-us", "1000", "--loops", "600", "--stall-us", str(STALL_US), "--stall-at", "300",
             "--threshold-us", str(STALL_US // 2))


def check_stall(r: dict) -> None:
    """The result of STALL_RUN: the stalled activation is the late one."""
    stall = r["stall"]
    assert stall["at"] == 300 and stall["index"] >= 300 and stall["ns"] == STALL_US * 1000
    # Interrupts were masked STALL_US past that deadline: a lower bound whatever the host does.
    assert stall["latency_ns"] >= STALL_US * 1000
    assert r["max_index"] == stall["index"] and r["max_ns"] == stall["latency_ns"]
    # Every other activation came in under half the stall: only the stalled one is over it.
    assert r["over"] == {str(STALL_US // 2 * 1000): 1}
    # The deadlines inside the stall were missed, not measured.
    assert r["missed"] >= STALL_US // 1000 - 1
    assert r["count"] + r["missed"] == r["activations"] == 600


def check_sysinfo(console: Console, **arch_keys) -> None:
    """The image's own sysinfo: a meta, one sysinfo record and end, with the keys every image has and
    `arch_keys` (how this one was entered, its counter and MMU); an option is refused with exit 2."""
    records, errors, status = console.run("sysinfo")
    assert (status, errors) == (0, [])
    meta, info, end = records
    assert (meta["type"], meta["subcommand"], info["type"], end["type"], end["status"]) == \
        ("meta", "sysinfo", "sysinfo", "end", "ok")
    assert (info["platform"], info["board"], info["image_version"]) == ("baremetal", "qemu-virt", meta["probe_version"])
    # One CPU, as a Linux probe's lists say it; the area of the board header's BOARD_MEM_AREA_BYTES.
    assert (info["cpus_online"], info["cpus_online_count"], info["mem_area_bytes"]) == ("0", 1, 96 << 20)
    assert info["caches_on"] is True
    assert {k: info[k] for k in arch_keys} == arch_keys
    _, errors, status = console.run("sysinfo", "--all")
    assert status == 2 and len(errors) == 1 and "takes no option" in errors[0]


#: a run no test waits for: what ends it is the signal
ENDLESS = ("latency", "--interval-us", "1000", "--duration-s", "600")
#: 32 sizes of 16 MiB in both modes with 20 samples each: seconds of TCG, where a signal takes milliseconds
LONG_CHASE = ("mem-lat", "--sizes", ",".join(["16M"] * 32), "--samples", "20")


def check_stopped_by_signal(console: Console, signum: int) -> None:
    """`signal <id> 2` (or 15) ends a running latency run and a long mem-lat with the results so far, an `end`
    marked interrupted and exit 0, as SIGINT ends the Linux probe's run; other signals and lines that come
    meanwhile are answered with `log` and ignored, and the image serves the next command."""
    cid = console.start(*ENDLESS)
    assert console.line(time.monotonic() + 30).startswith(f"{cid} out ")     # its meta: the run has started
    for line in (f"signal {int(cid) + 1} {signum}", "hello", f"signal {cid} 9", f"signal {cid} {signum}"):
        console.send(line)
    logs: list[str] = []
    records, errors, status = console.finish(cid, timeout_s=60, logs=logs)   # a hang guard: 600 s otherwise
    assert (status, errors) == (0, [])
    results = [r for r in records if r["type"] == "result"]
    assert [r["cpu"] for r in results] == [0, "all"] and records[-1]["status"] == "interrupted"
    r = results[1]
    assert r["count"] + r["missed"] == r["activations"] < 600_000
    assert sum(b[2] for b in r["histogram"]["buckets"]) == r["count"]
    assert logs == [f"bad request line 'signal {int(cid) + 1} {signum}': no command of that id is running; ignored.",
                    "bad request line 'hello': a command runs, and the image serves one request at a time; ignored.",
                    f"signal 9 to command {cid} ignored: the image ends a run early on 2 or 15 only."]
    cid = console.start(*LONG_CHASE)
    assert console.line(time.monotonic() + 30).startswith(f"{cid} out ")
    console.send(f"signal {cid} {signum}")
    records, errors, status = console.finish(cid, timeout_s=60)
    assert (status, errors, records[-1]["status"]) == (0, [], "interrupted")
    assert len([r for r in records if r["type"] == "result"]) < 64

