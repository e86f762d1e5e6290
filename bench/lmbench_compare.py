#!/usr/bin/env python3
"""rtvb-probe `os` figures side by side with LMbench's method, row by row.

LMbench is not packaged by Debian, so the reference is bench/lmbench_method.c: LMbench's
method for each disputed figure written from its published description (built here as a
dynamic binary, as LMbench is). The probe and the reference run alternately (the order
flips every round); each row reports both medians, the median of the per-round ratios
probe / reference and their range, so a busy machine shifts both sides of a round alike.

Each row names which of the probe's figures it compares: where the probe's own
definition differs from LMbench's, the probe also reports LMbench's definition under a
suffixed name (docs/probe/os-ipc.md explains every difference), and both rows appear.
The ratios go to build/bench/lmbench_compare.json (bench/figures.py), held to "agrees": within
10 % of 1.

usage: bench/lmbench_compare.py [--rounds R] [--dir DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from figures import BenchFile  # noqa: E402

BUILD = REPO / "build/bench"
AGREE = 0.10          # within 10 %: the two measure the same thing

HELLO_C = "int main(void) { return 0; }\n"

FILE_SIZES = (0, 1024, 4096, 10240)
PROBE_ARGS = ["os", "--tests", "select,sig_catch,prot_fault,fork,fork_exec,pagefault,mmap,file_create_delete,"
              "tcp_bw,file_reread,mmap_reread", "--fds", "10,100", "--mmap-sizes", "1m,16m",
              "--file-sizes", ",".join(str(s) for s in FILE_SIZES), "--pagefault-size", "16m",
              "--reread-size", "8m"]


def reference_commands(hello: dict[str, Path]) -> list[list[str]]:
    ref = str(BUILD / "lmbench_method")
    ref_static = str(BUILD / "lmbench_method-static")
    cmds = [[ref, "select", "10"], [ref, "select", "100"], [ref, "sig_catch"], [ref, "prot"],
            [ref, "pagefault", "16m"], [ref, "mmap", "1m"], [ref, "mmap", "16m"], [ref, "mmap_reread", "8m"],
            [ref, "file_reread", "8m"], [ref, "fork"], [ref_static, "fork"],
            [ref, "exec", str(hello["static"])], [ref, "exec", str(hello["dynamic"])],
            [ref, "tcp_bw"], [ref, "tcp_bw", "autotune"]]
    cmds += [[ref, "fs", str(size)] for size in FILE_SIZES]
    return cmds


def build() -> dict[str, Path]:
    subprocess.run(["make", "-s", "-C", str(REPO), "probe"], check=True)
    BUILD.mkdir(parents=True, exist_ok=True)
    src = REPO / "bench/lmbench_method.c"
    subprocess.run(["cc", "-O2", "-o", str(BUILD / "lmbench_method"), str(src)], check=True)
    subprocess.run(["cc", "-O2", "-static", "-o", str(BUILD / "lmbench_method-static"), str(src)], check=True)
    (BUILD / "hello.c").write_text(HELLO_C)
    hello = {"static": BUILD / "hello-static", "dynamic": BUILD / "hello-dynamic"}
    subprocess.run(["cc", "-O2", "-static", "-o", str(hello["static"]), str(BUILD / "hello.c")], check=True)
    subprocess.run(["cc", "-O2", "-o", str(hello["dynamic"]), str(BUILD / "hello.c")], check=True)
    return hello


def run_probe(workdir: str) -> list[dict]:
    out = subprocess.run([str(REPO / "build/probe/rtvb-probe"), *PROBE_ARGS, "--dir", workdir],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"rtvb-probe os failed ({out.returncode}): {out.stderr.strip()}")
    return [r for r in map(json.loads, out.stdout.splitlines()) if r.get("type") == "result"]


def run_reference(cmds: list[list[str]], workdir: str) -> dict[tuple[str, str], float]:
    """(test, variant) -> value in ns, B/s or files/s."""
    scale = {"us": 1e3, "MB/s": 1e6, "files/s": 1.0}
    found = {}
    for cmd in cmds:
        out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "TMPDIR": workdir})
        if out.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed: {out.stderr.strip()}")
        for line in out.stdout.splitlines():
            r = json.loads(line)
            variant = r["variant"]
            if r["test"] == "exec":
                variant = Path(variant).name
            elif r["test"] == "fork" and cmd[0].endswith("-static"):
                variant = "static"
            found[(r["test"], variant)] = r["value"] * scale[r["unit"]]
    return found


# ------------------------------------------------------------------- rows

Probe = Callable[[list[dict]], float]


def pick(test: str, **fields) -> Callable[[list[dict]], dict]:
    def find(results: list[dict]) -> dict:
        hits = [r for r in results if r["test"] == test and all(r.get(k) == v for k, v in fields.items())]
        if len(hits) != 1:
            raise SystemExit(f"the probe gave {len(hits)} results for {test} {fields}")
        return hits[0]
    return find


def time_of(test: str, **fields) -> Probe:
    return lambda rs: pick(test, **fields)(rs)["median_ns"]


def rate_of(test: str, **fields) -> Probe:
    return lambda rs: 1e9 / pick(test, **fields)(rs)["median_ns"]


def bandwidth_of(test: str, **fields) -> Probe:
    def value(rs: list[dict]) -> float:
        r = pick(test, **fields)(rs)
        return (r.get("size_bytes") or r["chunk_bytes"]) * 1e9 / r["median_ns"]
    return value


@dataclass
class Row:
    figure: str              # the probe's figure name
    reference: str           # what the reference measured
    unit: str                # ns, B/s, files/s
    probe: Probe
    ref: Callable[[dict], float]


def combined_rate(size: int) -> Callable[[dict], float]:
    """LMbench's create and delete rates as one create+delete rate."""
    return lambda ref: 1.0 / (1.0 / ref[("fs_create", str(size))] + 1.0 / ref[("fs_delete", str(size))])


def rows() -> list[Row]:
    out = []
    for n in (10, 100):
        out += [
            Row(f"select.{n}fd", f"select, {n} regular-file fds, nfds={n}", "ns",
                time_of("select", fds=n, fd_kind="idle pipe"), lambda ref, n=n: ref[("select", f"{n}fd")]),
            Row(f"select.{n}fd_file", f"select, {n} regular-file fds, nfds={n}", "ns",
                time_of("select", fds=n, fd_kind="regular file"), lambda ref, n=n: ref[("select", f"{n}fd")]),
            Row(f"select.{n}fd_file", f"select, {n} regular-file fds, all examined", "ns",
                time_of("select", fds=n, fd_kind="regular file"), lambda ref, n=n: ref[("select", f"{n}fd_all")]),
        ]
    out += [
        Row("sig_catch", "catch minus kill(self, 0)", "ns", time_of("sig_catch"),
            lambda ref: ref[("sig_catch", "")]),
        Row("sig_catch", "catch with the kill", "ns", time_of("sig_catch"),
            lambda ref: ref[("sig_catch", "with_send")]),
        Row("prot_fault", "refault minus signal catch", "ns", time_of("prot_fault", handler="siglongjmp"),
            lambda ref: ref[("prot", "")]),
        Row("prot_fault.fault_only", "refault minus signal catch", "ns", time_of("prot_fault", handler="return"),
            lambda ref: ref[("prot", "")]),
        Row("pagefault.file", "random read, shared mapping, per page", "ns",
            time_of("pagefault", backing="file", access="write"), lambda ref: ref[("pagefault", "file")]),
        Row("pagefault.file_read", "random read, shared mapping, per page", "ns",
            time_of("pagefault", backing="file", access="read"), lambda ref: ref[("pagefault", "file")]),
        Row("pagefault.file_read + release", "random read, shared mapping, per page", "ns",
            lambda rs: (pick("pagefault", backing="file", access="read")(rs)["median_ns"]
                        + pick("pagefault", backing="file", access="read")(rs)["release_ns_per_page"]),
            lambda ref: ref[("pagefault", "file")]),
    ]
    for size, token in ((1 << 20, "1MiB"), (16 << 20, "16MiB")):
        out += [
            Row(f"mmap.{token}", "map, a write per 16 KiB of the first tenth, unmap", "ns",
                time_of("mmap", size_bytes=size, touch="every page"), lambda ref, s=size: ref[("mmap", str(s))]),
            Row(f"mmap.{token}_sparse", "map, a write per 16 KiB of the first tenth, unmap", "ns",
                time_of("mmap", size_bytes=size, touch="sparse"), lambda ref, s=size: ref[("mmap", str(s))]),
        ]
    out += [
        Row("mmap_reread", "sum of a file mapped once", "B/s", bandwidth_of("mmap_reread", mapping="per pass"),
            lambda ref: ref[("mmap_reread", "")]),
        Row("mmap_reread.mapped", "sum of a file mapped once", "B/s", bandwidth_of("mmap_reread", mapping="once"),
            lambda ref: ref[("mmap_reread", "")]),
        Row("file_reread", "read() in 64 KiB calls, summed", "B/s", bandwidth_of("file_reread", scope="io_only"),
            lambda ref: ref[("file_reread", "")]),
    ]
    for size in FILE_SIZES:
        token = f"{size // 1024}KiB" if size else "0B"
        out += [
            Row(f"file_create_delete.{token}", "batch create and delete, as one rate", "files/s",
                rate_of("file_create_delete", size_bytes=size, op="create+delete"), combined_rate(size)),
            Row(f"file_create.{token}", "batch create, 100 per directory", "files/s",
                rate_of("file_create_delete", size_bytes=size, op="create"),
                lambda ref, s=size: ref[("fs_create", str(s))]),
            Row(f"file_delete.{token}", "batch delete", "files/s",
                rate_of("file_create_delete", size_bytes=size, op="delete"),
                lambda ref, s=size: ref[("fs_delete", str(s))]),
        ]
    out += [
        Row("fork", "fork + exit from a dynamic binary", "ns", time_of("fork"), lambda ref: ref[("fork", "")]),
        Row("fork", "fork + exit from a static binary", "ns", time_of("fork"),
            lambda ref: ref[("fork", "static")]),
        Row("fork_exec", "fork + exec of a dynamic hello", "ns", time_of("fork_exec"),
            lambda ref: ref[("exec", "hello-dynamic")]),
        Row("fork_exec", "fork + exec of a static hello", "ns", time_of("fork_exec"),
            lambda ref: ref[("exec", "hello-static")]),
        Row("tcp_bw", "64 KiB reads, 1 MiB socket buffers", "B/s", bandwidth_of("tcp_bw"),
            lambda ref: ref[("tcp_bw", "1MiB_buffers")]),
        Row("tcp_bw", "64 KiB reads, autotuned buffers", "B/s", bandwidth_of("tcp_bw"),
            lambda ref: ref[("tcp_bw", "autotuned")]),
    ]
    return out


def shown(value: float, unit: str) -> str:
    if unit == "ns":
        return f"{value / 1e3:.3f} us" if value >= 1000 else f"{value:.1f} ns"
    if unit == "B/s":
        return f"{value / 1e6:.0f} MB/s"
    return f"{value:.0f}/s"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dir", default=os.environ.get("TMPDIR", "/tmp"), help="where the file tests work")
    ap.add_argument("--json", help="also write every round's values to this file")
    args = ap.parse_args()

    hello = build()
    cmds = reference_commands(hello)
    table = rows()
    probe_vals: list[list[float]] = [[] for _ in table]
    ref_vals: list[list[float]] = [[] for _ in table]
    out = BenchFile(__file__)
    load = [os.getloadavg()[0]]
    for rnd in range(args.rounds):
        # The order flips every round, so drift during a round favours neither side.
        if rnd % 2:
            ref = run_reference(cmds, args.dir)
            results = run_probe(args.dir)
        else:
            results = run_probe(args.dir)
            ref = run_reference(cmds, args.dir)
        for i, row in enumerate(table):
            probe_vals[i].append(row.probe(results))
            ref_vals[i].append(row.ref(ref))
        print(f"round {rnd + 1}/{args.rounds} done", file=sys.stderr)
    load.append(os.getloadavg()[0])

    print(f"rtvb-probe os vs LMbench's method (bench/lmbench_method.c): {args.rounds} alternating rounds, "
          f"files in {args.dir}, load average {load[0]:.2f} -> {load[1]:.2f}")
    print(f"{'probe figure':32} {'reference (LMbench method)':50} {'probe':>12} {'reference':>12} "
          f"{'ratio':>6} {'range':>13}  verdict")
    report = []
    for row, pv, rv in zip(table, probe_vals, ref_vals):
        ratios = [p / r for p, r in zip(pv, rv)]
        ratio = statistics.median(ratios)
        verdict = "agrees" if abs(ratio - 1) <= AGREE else "differs"
        print(f"{row.figure:32} {row.reference:50} {shown(statistics.median(pv), row.unit):>12} "
              f"{shown(statistics.median(rv), row.unit):>12} {ratio:6.2f} "
              f"{min(ratios):5.2f}..{max(ratios):5.2f}  {verdict}")
        report.append({"figure": row.figure, "reference": row.reference, "unit": row.unit, "probe": pv,
                       "ref": rv, "ratio_median": ratio})
        # Two goals in one: within AGREE of 1 from above and from below; the row keeps the one it is nearer.
        goal = f"<= {1 + AGREE:g}" if ratio >= 1 else f">= {1 - AGREE:g}"
        out.add(f"os {row.figure}, probe / LMbench method", row.reference, ratios, goal)
    out.write()
    if args.json:
        Path(args.json).write_text(json.dumps({"rounds": args.rounds, "load": load, "rows": report}, indent=1))


if __name__ == "__main__":
    main()
