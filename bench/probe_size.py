#!/usr/bin/env python3
"""Size of the static probe per architecture, stripped, against the goal of 1 MiB.

The probe is copied onto boards and into guests as it is, so what counts is the stripped binary.
Each built probe (build/probe/rtvb-probe, the native one, and build/probe/<arch>/rtvb-probe from
`make probe-cross`) is stripped into a temporary copy with that architecture's strip tool; the
builds themselves are left as they are. Printed per architecture: the built and the stripped size
in bytes, the goal, the margin (goal - stripped; negative when over) and the verdict. A missing
build or strip tool is a row saying so. The ratios stripped size / 1 MiB (one round: a size does
not vary) go to build/bench/probe_size.json, held to <= 1.

usage: bench/probe_size.py [--build DIR]
"""

from __future__ import annotations

import argparse
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from figures import BenchFile  # noqa: E402

GOAL = 1 << 20   # bytes, stripped, on every architecture
STRIP = {"aarch64": "aarch64-linux-gnu-strip", "armhf": "arm-linux-gnueabihf-strip",
         "riscv64": "riscv64-linux-gnu-strip"}


def stripped_size(binary: Path, tool: str, tmp: Path) -> int:
    copy = tmp / "rtvb-probe"
    subprocess.run([tool, "-o", str(copy), str(binary)], check=True)
    size = copy.stat().st_size
    copy.unlink()
    return size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", type=Path, default=REPO / "build" / "probe", help="where the probes are built")
    args = ap.parse_args()

    rows = [(platform.machine() + " (native)", args.build / "rtvb-probe", "strip")]
    rows += [(arch, args.build / arch / "rtvb-probe", tool) for arch, tool in STRIP.items()]
    out = BenchFile(__file__)
    print(f"static probe, stripped, against the goal of {GOAL:,} bytes (1 MiB)")
    print(f"{'arch':18} {'built':>11} {'stripped':>11} {'goal':>11} {'margin':>10}  verdict")
    with tempfile.TemporaryDirectory() as tmp:
        for name, binary, tool in rows:
            if not binary.exists():
                print(f"{name:18} not built: run make probe probe-cross")
                continue
            if not shutil.which(tool):
                print(f"{name:18} {binary.stat().st_size:11,} {tool} is not installed")
                continue
            size = stripped_size(binary, tool, Path(tmp))
            verdict = "pass" if size <= GOAL else "fail"
            print(f"{name:18} {binary.stat().st_size:11,} {size:11,} {GOAL:11,} {GOAL - size:10,}  {verdict}")
            out.add(f"stripped probe size, {name} / 1 MiB", "the 1 MiB goal", [size / GOAL], "<= 1")
    out.write()


if __name__ == "__main__":
    main()
