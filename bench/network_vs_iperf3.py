#!/usr/bin/env python3
"""TCP loopback throughput and CPU per GB of `rtvb-probe network` vs. iperf3.

Each round runs one session of the probe (`network --serve` and `network --connect`) and one of
iperf3 (`-s -1` and `-c`) on 127.0.0.1, the same duration and the same 128 KiB per send and receive
(`--size 128K`, `-l 128K`), the order flipping every round, so that what else the machine does lands
on both alike. The rate is the receiver's (the probe's REPORT, iperf3's `sum_received`); the CPU
time of each side is its whole process's user + system time (wait4), over the bytes that arrived.
The probe's receiver checks every byte against the sender's pattern; iperf3's checks nothing. On
loopback the kernel's TCP work for a segment runs in whichever process the kernel is in at the
time, so the split of CPU between the two ends moves from run to run; both ends' sum is steadier.

Per round the ratios probe / iperf3 of the rate and of each side's CPU per GB; printed and written
to build/bench/network_vs_iperf3.json: their median and range, against the goals (rate >= 0.95,
receiver CPU per GB <= 1.05). With --udp-rate-bps, a paced UDP stream of 1400-byte datagrams at that
rate too (`--transport udp --rate-bps`, `-u -b`), whose rows compare CPU per GB only: at a pace the
rate is the one asked for on both sides, and they have no goal.

usage: bench/network_vs_iperf3.py [--rounds R] [--duration-s D] [--udp-rate-bps B] [--probe PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import time
from pathlib import Path

from figures import ratio_row, write_rows

REPO = Path(__file__).resolve().parent.parent
CHUNK = 131072
DATAGRAM = 1400


def cpu_s(proc: subprocess.Popen, timeout_s: float) -> float:
    """Waits for proc (at most timeout_s) and returns its user + system CPU seconds."""
    deadline = time.monotonic() + timeout_s
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return usage.ru_utime + usage.ru_stime
        if time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(f"{proc.args[0]} did not end within {timeout_s:.0f} s")
        time.sleep(0.02)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def probe_session(probe: str, duration_s: float, udp_rate: int | None) -> dict:
    """One probe session: received bytes, the receiver's rate, each side's CPU seconds."""
    server = subprocess.Popen([probe, "network", "--serve", "--port", "0", "--bind", "127.0.0.1"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    port = json.loads(server.stdout.readline())["params"]["port"]
    mode = ["--transport", "udp", "--rate-bps", str(udp_rate), "--size", str(DATAGRAM)] if udp_rate \
        else ["--size", str(CHUNK)]
    client = subprocess.Popen([probe, "network", "--connect", f"127.0.0.1:{port}", "--duration-s", str(duration_s),
                               *mode], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = client.stdout.read()
    sender_cpu = cpu_s(client, duration_s + 60)
    server.stdout.read()
    receiver_cpu = cpu_s(server, 60)
    result = [r for r in map(json.loads, out.splitlines()) if r.get("type") == "result"]
    if client.returncode != 0 or not result or result[0].get("verified") is not True:
        raise SystemExit(f"the probe's session failed: {client.stderr.read().strip() or out[-500:]}")
    r = result[0]
    return {"bytes": r["received_bytes"], "bps": r["rate_bits_per_s"], "sender_cpu": sender_cpu,
            "receiver_cpu": receiver_cpu}


def iperf3_session(duration_s: float, udp_rate: int | None) -> dict:
    """One iperf3 session, the same figures as probe_session."""
    port = str(free_port())
    server = subprocess.Popen(["iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", port],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    mode = ["-u", "-b", str(udp_rate), "-l", str(DATAGRAM)] if udp_rate else ["-l", str(CHUNK)]
    for _ in range(100):                          # until the server listens
        client = subprocess.Popen(["iperf3", "-c", "127.0.0.1", "-p", port, "-J", "-t", str(duration_s), *mode],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out = client.stdout.read()
        sender_cpu = cpu_s(client, duration_s + 60)
        end = json.loads(out or "{}").get("end", {})
        got = end.get("sum") if udp_rate else end.get("sum_received")
        if client.returncode == 0 and got:
            break
        time.sleep(0.05)
    else:
        server.kill()
        raise SystemExit(f"iperf3 did not run: {out[-500:]}")
    receiver_cpu = cpu_s(server, 60)
    received = got["bytes"] * (1 - got.get("lost_percent", 0) / 100) if udp_rate else got["bytes"]
    return {"bytes": received, "bps": got["bits_per_second"], "sender_cpu": sender_cpu,
            "receiver_cpu": receiver_cpu}


def per_gb(s: dict, side: str) -> float:
    return s[side] / s["bytes"] * 1e9


def compare(probe: str, rounds: int, duration_s: float, udp_rate: int | None) -> tuple[list[dict], list[str]]:
    """The rows of one transport, and a line per round."""
    ratios: dict[str, list[float]] = {"bps": [], "receiver_cpu": [], "sender_cpu": [], "both_cpu": []}
    lines = []
    for i in range(rounds):
        sessions = {}
        for who in (("probe", "iperf3") if i % 2 == 0 else ("iperf3", "probe")):
            sessions[who] = (probe_session(probe, duration_s, udp_rate) if who == "probe"
                             else iperf3_session(duration_s, udp_rate))
        ours, theirs = sessions["probe"], sessions["iperf3"]
        ratios["bps"].append(ours["bps"] / theirs["bps"])
        for s in (ours, theirs):
            s["both_cpu"] = s["receiver_cpu"] + s["sender_cpu"]
        for side in ("receiver_cpu", "sender_cpu", "both_cpu"):
            ratios[side].append(per_gb(ours, side) / per_gb(theirs, side))
        lines.append(f"  {'udp' if udp_rate else 'tcp'} round {i + 1}: Gbit/s {ours['bps'] / 1e9:.2f} vs {theirs['bps'] / 1e9:.2f}, "
                     f"receiver CPU s/GB {per_gb(ours, 'receiver_cpu'):.3f} vs {per_gb(theirs, 'receiver_cpu'):.3f}, "
                     f"sender {per_gb(ours, 'sender_cpu'):.3f} vs {per_gb(theirs, 'sender_cpu'):.3f}")
    if udp_rate:
        what = f"udp loopback at {udp_rate / 1e6:g} Mbit/s, {DATAGRAM}-byte datagrams"
        base = "iperf3 -u, same pace and size"
        return [ratio_row(f"{what}: receiver CPU per GB", base, ratios["receiver_cpu"], None),
                ratio_row(f"{what}: sender CPU per GB", base, ratios["sender_cpu"], None)], lines
    what, base = "tcp loopback, 128 KiB sends", f"iperf3 -l 128K, same {duration_s:g} s"
    return [ratio_row(f"{what}: receiver rate", base, ratios["bps"], ">= 0.95"),
            ratio_row(f"{what}: receiver CPU per GB", base, ratios["receiver_cpu"], "<= 1.05"),
            ratio_row(f"{what}: sender CPU per GB", base, ratios["sender_cpu"], None),
            ratio_row(f"{what}: both ends' CPU per GB", base, ratios["both_cpu"], None)], lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--duration-s", type=float, default=3.0)
    ap.add_argument("--udp-rate-bps", type=int, default=None,
                    help="also a paced udp stream at this rate (e.g. 1000000000)")
    ap.add_argument("--probe", default=None, help="the probe to run (default: build/probe/rtvb-probe, built)")
    args = ap.parse_args()
    if args.probe is None:
        subprocess.run(["make", "-s", "-C", str(REPO), "probe"], check=True)
    probe = args.probe or str(REPO / "build/probe/rtvb-probe")

    load_before = list(os.getloadavg())
    rows, lines = compare(probe, args.rounds, args.duration_s, None)
    if args.udp_rate_bps:
        udp_rows, udp_lines = compare(probe, args.rounds, args.duration_s, args.udp_rate_bps)
        rows += udp_rows
        lines += udp_lines
    load_after = list(os.getloadavg())

    out = write_rows("network_vs_iperf3", load_before, load_after, rows)
    print(f"rtvb-probe network vs iperf3, {args.rounds} alternating rounds of {args.duration_s:g} s; load "
          f"{' '.join(f'{x:.2f}' for x in load_before)} -> {' '.join(f'{x:.2f}' for x in load_after)}")
    print("\n".join(lines))
    width = max(len(r["figure"]) for r in rows)
    print(f"{'figure (ratio probe / iperf3)':<{width}} {'median':>7} {'range':>13} {'goal':>8}  met")
    for r in rows:
        met = {True: "yes", False: "NO", None: "-"}[r["met"]]
        print(f"{r['figure']:<{width}} {r['median']:7.2f} {r['min']:6.2f}-{r['max']:<6.2f} {r['goal'] or '-':>8}  {met}")
    print(f"written to {out.relative_to(REPO)}")


if __name__ == "__main__":
    main()
