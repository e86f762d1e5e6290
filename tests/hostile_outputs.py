"""Outputs of the external tools the `command` kind reads, valid and made hostile: small valid texts of
every format, and a seeded mutation of them (truncated, nested deep, hostile numbers, extremes
swapped, shares above 100 %, thousands of threads, bins beyond any latency, stray characters), shared
by the import harness and the command output harness."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from rtvbench.kinds.command.formats import MAX_BUCKETS, MAX_SERIES

FIXTURES = Path(__file__).parent / "fixtures" / "command"


def thread(i: int, bins: int = 3) -> dict:
    return {"histogram": {str(us): 5 + us for us in range(bins)}, "cycles": sum(5 + us for us in range(bins)),
            "min": 0, "max": bins - 1, "avg": 1.2, "cpu": i, "node": 0}


def hist_text(threads: int, bins: int = 4) -> str:
    rows = "".join(f"{us:06d} " + " ".join(["3"] * threads) + "\n" for us in range(bins))
    line = lambda name, v: f"# {name}: " + " ".join([str(v)] * threads) + "\n"    # noqa: E731
    return (f"# /dev/cpu_dma_latency set to 0us\n{rows}" + line("Total", 3 * bins) + line("Min Latencies", 0)
            + line("Avg Latencies", 1) + line("Max Latencies", bins - 1) + line("Histogram Overflows", 0))


BASE = {
    "cyclictest-json": json.dumps({"file_version": 1, "thread": {str(i): thread(i) for i in range(2)}}, indent=2),
    "cyclictest-hist": hist_text(2),
    "rtla-timerlat": (FIXTURES / "rtla-timerlat-top.txt").read_text(),
    "rtla-timerlat-hist": (FIXTURES / "rtla-timerlat-hist.txt").read_text(),
    "rtla-osnoise": (FIXTURES / "rtla-osnoise-top.txt").read_text(),
    "stress-ng-yaml": ("system-info:\n      stress-ng-version: 0.17.06\nmetrics:\n    - stressor: cpu\n"
                       "      bogo-ops: 1234\n      bogo-ops-per-second-usr-sys-time: 1200.5\n"
                       "      bogo-ops-per-second-real-time: 1230.1\n      wall-clock-time: 1.003\n"),
    "hyperfine-json": json.dumps({"results": [{"command": "sleep 0.01", "mean": 0.0105, "stddev": 0.0002,
                                               "median": 0.0105, "user": 0.0003, "system": 0.0004, "min": 0.0101,
                                               "max": 0.0109, "times": [0.0101, 0.0105, 0.0109]}]}, indent=2),
    "openssl-speed": "+H:16:64:256\n+F:6:sha256:1000.5:2000.5:3000.25\n+F:6:md5:900:1900:2900\n",
    "iperf3-json": json.dumps({"start": {"test_start": {"protocol": "UDP"}}, "end": {
        "sum_sent": {"bytes": 1000, "bits_per_second": 8000.0, "retransmits": 0},
        "sum_received": {"bytes": 990, "bits_per_second": 7920.0},
        "sum": {"jitter_ms": 0.01, "lost_packets": 1, "lost_percent": 1.0, "packets": 100, "bits_per_second": 8000.0}}},
        indent=2),
}
HOSTILE_NUMBERS = ["Infinity", "-Infinity", "NaN", "1e400", "-1e400", "-5", "-0.5", "1" + "0" * 30, "9" * 5000,
                   "1e308", "nan", "inf", "0", "4294967296000", "1.5.5"]
NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])")


def explosion(fmt: str, n: int) -> str:
    """The format's text with n threads, CPUs, commands, stressors or algorithms."""
    if fmt == "cyclictest-json":
        return json.dumps({"thread": {str(i): thread(i, 2) for i in range(n)}})
    if fmt == "cyclictest-hist":
        return hist_text(n, 2)
    if fmt == "rtla-timerlat":
        return "".join(f"{i:3d} #10 | 1 0 1 2 | 1 0 1 2\n" for i in range(n))
    if fmt == "rtla-timerlat-hist":
        row = lambda name, v: f"{name} " + " ".join([v] * n) + "\n"    # noqa: E731
        return ("Index " + " ".join(f"Thr-{i:03d}" for i in range(n)) + "\n" + row("1", "3") + row("over:", "0")
                + row("count:", "3") + row("min:", "1") + row("avg:", "1") + row("max:", "1"))
    if fmt == "rtla-osnoise":
        return "Max Single\n" + "".join(f"{i:3d} #3 1000 10 99.0 5 5 0 0 1 0 0\n" for i in range(n))
    if fmt == "stress-ng-yaml":
        return "metrics:\n" + "".join(f"    - stressor: s{i}\n      bogo-ops-per-second-real-time: 1.0\n" for i in range(n))
    if fmt == "hyperfine-json":
        return json.dumps({"results": [{"command": f"c{i}", "mean": 0.1, "min": 0.1, "max": 0.1} for i in range(n)]})
    if fmt == "openssl-speed":
        return "+H:16\n" + "".join(f"+F:6:alg{i}:1000\n" for i in range(n))
    return json.dumps({"end": {"sum_sent": {"bits_per_second": 1.0}}, "streams": [{"x": i} for i in range(n)]})


def mutate(rng: random.Random, fmt: str) -> str:
    text = BASE[fmt]
    how = rng.randrange(10)
    if how == 0:                                        # truncated anywhere
        return text[:rng.randrange(len(text))]
    if how in (1, 2, 3):                                # a number made hostile
        numbers = list(NUMBER.finditer(text))
        m = rng.choice(numbers)
        return text[:m.start()] + rng.choice(HOSTILE_NUMBERS) + text[m.end():]
    if how == 4:                                        # nested deep
        depth = rng.choice([65, 1000, 100_000])
        if text.lstrip().startswith("{"):
            return text.rstrip()[:-1] + ', "deep": ' + "[" * depth + "]" * depth + "}"
        return "[" * depth + text
    if how == 5:                                        # extremes swapped
        if fmt in ("cyclictest-json", "hyperfine-json"):
            return re.sub(r'"min": ([^,]+), (.*?)"max": ([^,}]+)', r'"min": \3, \2"max": \1', text, count=1, flags=re.S)
        if fmt == "cyclictest-hist":
            return text.replace("# Min Latencies: 0 0", "# Min Latencies: 900 900")
        if fmt == "rtla-timerlat":
            return text.replace("|        1         0         1        12 |", "|        1       900         1        12 |")
        return text.replace("99.99800", "300.0").replace("1.0, \"packets\"", "200.0, \"packets\"")
    if how == 6:                                        # more threads than a report can show
        return explosion(fmt, rng.choice([MAX_SERIES + 1, 10_000]))
    if how == 7:                                        # bins beyond any latency, or too many
        if fmt == "cyclictest-json":
            data = json.loads(text)
            data["thread"]["0"]["histogram"] = rng.choice([{"100000000000000000000": 1}, {str(10**12): 1},
                                                           {str(us): 1 for us in range(MAX_BUCKETS + 1)}])
            return json.dumps(data)
        if fmt == "cyclictest-hist":
            return text.replace("000000 3 3", rng.choice(["100000000000000000000 3 3", f"{10**13} 3 3", "-1 3 3"]))
        return text + "\n" + "9" * rng.choice([30, 5000]) + "\n"
    if how == 8:                                        # control characters and stray bytes decoded
        i = rng.randrange(len(text))
        return text[:i] + rng.choice(["\x00", "\x1b]0;owned\x07", "\ufffd", "\u2028", "\r"]) + text[i:]
    return text                                         # unchanged: must import
