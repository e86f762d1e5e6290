"""Boot time of rtvbench's qemu guests, and the cost of one command through the guest agent.

For each round, in alternating order: boot an x86_64 and an aarch64 guest (kernels from
`make kernels`), take the host's wall time from QEMU start to the probe's `ready` line and the
guest kernel's own share (its CLOCK_BOOTTIME at `ready`), time a trivial command (`read` of
/proc/uptime) through the agent alternating with the same read on the host, and power the guest
off. Prints the median of each figure over the rounds, and writes two ratios per architecture to
build/bench/guest_boot.json (bench/figures.py): the boot against the guest kernel's own clock
(what QEMU's start and the agent add) and the agent's command against the host's read (what a
command through the agent costs over the read itself). Under TCG these are an emulator's figures;
with KVM the same script measures KVM guests.

    .venv/bin/python bench/guest_boot.py [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from figures import BenchFile  # noqa: E402
from rtvbench.campaign.reader import parse_campaign  # noqa: E402

ARCHES = ("x86_64", "aarch64")


def one_boot(arch: str, workdir: Path) -> dict[str, float]:
    kernel = REPO / "kernels" / arch / "vmlinuz"
    campaign = parse_campaign(f'name = "boot"\n[environments.g]\ntarget = "qemu"\narch = "{arch}"\n'
                              f'kernel = "{kernel}"\n[benchmarks.b]\nkind = "os"\n', "boot.toml", workdir)
    target = campaign.environments["g"]
    try:
        target.deploy_probe()
        d = target.describe()
        reads, ratios = [], []
        for i in range(20):
            t0 = time.perf_counter()
            if i % 2:
                Path("/proc/uptime").read_text()
                t1 = time.perf_counter()
                target.read_file("/proc/uptime")
                agent, host = time.perf_counter() - t1, t1 - t0
            else:
                target.read_file("/proc/uptime")
                t1 = time.perf_counter()
                Path("/proc/uptime").read_text()
                agent, host = t1 - t0, time.perf_counter() - t1
            reads.append(agent)
            ratios.append(agent / host)
        t0 = time.perf_counter()
    finally:
        target.close()
    return {"boot_s": d["boot_s"], "guest_kernel_s": d["guest_boottime_ns"] / 1e9,
            "command_ms": 1e3 * statistics.median(reads), "command_ratio": statistics.median(ratios),
            "poweroff_s": time.perf_counter() - t0, "accel": d["accel"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    missing = [a for a in ARCHES if not (REPO / "kernels" / a / "vmlinuz").is_file()]
    if missing:
        print(f"no kernel for {', '.join(missing)} in kernels/: run `make kernels` first", file=sys.stderr)
        return 2
    results: dict[str, list[dict]] = {a: [] for a in ARCHES}
    out = BenchFile(__file__)
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for arch in (ARCHES if r % 2 == 0 else ARCHES[::-1]):
                results[arch].append(one_boot(arch, Path(tmp)))
    print(f"{'guest':<10} {'accel':<6} {'boot (s)':>9} {'guest kernel+init (s)':>22} {'command (ms)':>13} "
          f"{'poweroff (s)':>13}   medians of {args.rounds} rounds")
    for arch, rows in results.items():
        med = {k: statistics.median(x[k] for x in rows) for k in ("boot_s", "guest_kernel_s", "command_ms",
                                                                    "poweroff_s")}
        print(f"{arch:<10} {rows[0]['accel']:<6} {med['boot_s']:>9.2f} {med['guest_kernel_s']:>22.2f} "
              f"{med['command_ms']:>13.2f} {med['poweroff_s']:>13.2f}")
    for arch, rows in results.items():
        out.add(f"{arch} guest: QEMU start to ready / guest kernel's clock at ready", "the guest's CLOCK_BOOTTIME",
                [x["boot_s"] / x["guest_kernel_s"] for x in rows])
        out.add(f"{arch} guest: read of /proc/uptime through the agent / on the host", "the same read on the host",
                [x["command_ratio"] for x in rows])
    out.write()
    print(out.load_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
