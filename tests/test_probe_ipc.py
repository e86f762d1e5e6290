"""End-to-end tests of `rtvb-probe ipc`: content integrity in both directions (with the
hidden corruption hooks), round-trip figures by size, two probes over loopback and across
a pair of network namespaces joined by veth, interruption without a leftover peer, and
usage errors.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from helpers.proc_state import tcp_bytes_received
from host_helpers import wait_for
from probe_records import records
from test_probe_os import CPU, assert_usage_error

SIZES = [16, 64, 256, 1024, 1280, 4096, 65536]


def run_ipc(probe: Path, *args: str, expect_rc: int = 0, prefix: tuple[str, ...] = ()) -> list[dict]:
    proc = subprocess.run([*prefix, str(probe), "ipc", *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == expect_rc, proc.stderr
    recs = records(proc.stdout)
    assert recs[0]["type"] == "meta" and recs[-1]["type"] == "end"
    return recs


def client_results(recs: list[dict]) -> list[dict]:
    return [r for r in recs if r["type"] == "result"]


def check_distribution(res: dict) -> None:
    """The figures of one (transport, size) agree with each other and the histogram."""
    buckets = res["histogram"]["buckets"]
    assert sum(b[2] for b in buckets) == res["count"]
    assert buckets[0][0] <= res["min_ns"] < buckets[0][1]
    assert buckets[-1][0] <= res["max_ns"] < buckets[-1][1]
    assert res["min_ns"] <= res["p50_ns"] <= res["p90_ns"] <= res["p99_ns"] <= res["p999_ns"] \
        <= res["p9999_ns"] <= res["max_ns"]
    assert res["min_ns"] <= res["avg_ns"] <= res["max_ns"]
    rate = res["count"] / (res["elapsed_ns"] / 1e9)
    assert res["round_trips_per_s"] == pytest.approx(rate, rel=1e-6)
    assert res["payload_bps"] == pytest.approx(2 * res["size_bytes"] * rate, rel=1e-6)
    # Round trips are back to back: their sum cannot exceed the phase's wall time.
    assert res["avg_ns"] * res["count"] <= res["elapsed_ns"] * 1.001


def test_local_round_trips_cover_every_size_verified_and_grow_with_size(probe):
    recs = run_ipc(probe, "--transport", "pipe,unix,udp,tcp", "--count", "1000", "--cpus", f"{CPU},{CPU}")
    assert recs[0]["params"]["sizes_bytes"] == SIZES and recs[0]["params"]["cpus"] == [CPU, CPU]
    assert recs[-1]["status"] == "ok"
    res = client_results(recs)
    assert [(r["transport"], r["size_bytes"]) for r in res] == [(t, s) for t in ("pipe", "unix", "udp", "tcp")
                                                               for s in SIZES]
    for r in res:
        assert r["role"] == "client" and r["peer"] == "local"
        assert r["count"] == 1000 and r["complete"] and r["verified"] is True, r
        check_distribution(r)
    for t in ("pipe", "unix", "udp", "tcp"):
        by_size = {r["size_bytes"]: r for r in res if r["transport"] == t}
        # 64 KiB is copied twice each way, 16 B is nothing to copy: the medians must show it.
        assert by_size[65536]["p50_ns"] > by_size[16]["p50_ns"] * 1.2, t
        assert by_size[16]["min_ns"] > 300, t


@pytest.mark.parametrize("hook,direction", [("--x-corrupt-reply", "reply"), ("--x-corrupt-request", "request")])
@pytest.mark.functional
def test_a_corrupted_byte_is_an_error_in_either_direction(probe, hook, direction):
    """The hidden test hooks flip the last byte of message 150 (counting warmup) of
    every size: the peer's reply, or the client's request. Either is found, named, and
    ends the run with status error and exit code 3."""
    recs = run_ipc(probe, "--transport", "unix", "--sizes", "1024,4096", "--count", "300", hook, "150",
                   expect_rc=3)
    (res,) = client_results(recs)   # the run stops at the first corrupted size
    assert res["size_bytes"] == 1024 and res["verified"] is False
    assert res["corruption"]["direction"] == direction
    assert res["corruption"]["message"] == 150 and res["corruption"]["offset"] == 1023
    assert res["corruption"]["expected"] ^ res["corruption"]["got"] == 1
    end = recs[-1]
    assert end["status"] == "error" and "150" in end["error"] and "1024-byte" in end["error"]


@pytest.mark.functional
def test_the_corruption_check_passes_a_clean_run(probe):
    (res,) = client_results(run_ipc(probe, "--transport", "udp", "--sizes", "65536", "--count", "300"))
    assert res["verified"] is True and "corruption" not in res


def serve(probe: Path, *args: str, prefix: tuple[str, ...] = ()) -> tuple[subprocess.Popen, dict]:
    """A --serve probe on an ephemeral port; returns it and its meta record."""
    proc = subprocess.Popen([*prefix, str(probe), "ipc", "--serve", "--port", "0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    meta = records(proc.stdout.readline())[0]
    assert meta["type"] == "meta" and meta["params"]["mode"] == "serve", meta
    assert meta["params"]["port"] > 0
    return proc, meta


def check_session(server: subprocess.Popen, client: list[dict], transport: str, sizes: list[int], count: int):
    out, err = server.communicate(timeout=60)
    assert server.returncode == 0, err
    srv = records(out)
    assert srv[-1]["status"] == "ok", srv[-1]
    assert client[-1]["status"] == "ok", client[-1]
    res = client_results(client)
    assert [r["size_bytes"] for r in res] == sizes
    for r in res:
        assert r["transport"] == transport and r["verified"] is True and r["count"] == count
        check_distribution(r)
    served = [r for r in srv if r["type"] == "result"]
    assert [(r["role"], r["size_bytes"], r["messages"], r["verified"]) for r in served] == \
        [("server", s, count + 100, True) for s in sizes]
    return res


@pytest.mark.parametrize("transport", ["tcp", "udp"])
@pytest.mark.functional
def test_serve_and_connect_across_two_processes_on_loopback(probe, transport):
    server, meta = serve(probe, "--transport", transport)
    port = meta["params"]["port"]
    client = run_ipc(probe, "--transport", transport, "--connect", f"127.0.0.1:{port}", "--sizes", "16,65536",
                     "--count", "500")
    res = check_session(server, client, transport, [16, 65536], 500)
    assert all(r["peer"] == f"127.0.0.1:{port}" for r in res)


@pytest.fixture
def netns_pair():
    """Two network namespaces joined by a veth pair, 10.213.x.1 <-> 10.213.x.2."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("needs root and iproute2 for ip netns")
    tag = f"{os.getpid() % 10000}"
    a, b = f"rtvbA{tag}", f"rtvbB{tag}"
    subnet = f"10.213.{os.getpid() % 250}"
    steps = [
        ["ip", "netns", "add", a], ["ip", "netns", "add", b],
        ["ip", "link", "add", f"rtva{tag}", "netns", a, "type", "veth", "peer", "name", f"rtvb{tag}", "netns", b],
        ["ip", "-n", a, "addr", "add", f"{subnet}.1/24", "dev", f"rtva{tag}"],
        ["ip", "-n", b, "addr", "add", f"{subnet}.2/24", "dev", f"rtvb{tag}"],
        ["ip", "-n", a, "link", "set", f"rtva{tag}", "up"], ["ip", "-n", b, "link", "set", f"rtvb{tag}", "up"],
    ]
    try:
        for step in steps:
            proc = subprocess.run(step, capture_output=True, text=True)
            if proc.returncode:
                pytest.skip(f"cannot build a namespace pair here ({' '.join(step)}: {proc.stderr.strip()})")
        yield a, b, f"{subnet}.1"
    finally:
        for ns in (a, b):   # deleting a namespace deletes its end of the veth pair
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


@pytest.mark.parametrize("transport", ["tcp", "udp"])
def test_serve_and_connect_across_a_network_namespace_pair(probe, netns_pair, transport):
    """The two ends in different network stacks, as native <-> guest: only the veth link
    joins them, and the server sees the client's own address."""
    ns_a, ns_b, addr_a = netns_pair
    server, meta = serve(probe, "--transport", transport, prefix=("ip", "netns", "exec", ns_a))
    port = meta["params"]["port"]
    client = run_ipc(probe, "--transport", transport, "--connect", f"{addr_a}:{port}", "--sizes", "64,4096,65536",
                     "--count", "300", prefix=("ip", "netns", "exec", ns_b))
    check_session(server, client, transport, [64, 4096, 65536], 300)
    # And the client end really was elsewhere: 127.0.0.1 of namespace b has no server.
    refused = run_ipc(probe, "--connect", f"127.0.0.1:{port}", "--sizes", "16", "--count", "1", expect_rc=3,
                      prefix=("ip", "netns", "exec", ns_b))
    assert refused[-1]["status"] == "error"


def peer_children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(x) for x in path.read_text().split()] if path.exists() else []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.functional
def test_a_signal_keeps_the_data_so_far_and_leaves_no_peer(probe, sig):
    if shutil.which("ss") is None:
        pytest.skip("needs ss (iproute2) to see the round trips so far")
    proc = subprocess.Popen([str(probe), "ipc", "--transport", "tcp", "--sizes", "256", "--count", "100000000"],
                            stdout=subprocess.PIPE, text=True)
    children = wait_for(lambda: peer_children(proc.pid), 60, "the local peer to start")
    # Signalled once its socket has received 1000 replies' worth of bytes: a reply comes only after
    # the request it answers, which the client sends after reading the reply before, so at least
    # 1000 - 100 (warmup) - a few (the phase's control messages) measured round trips are done.
    wait_for(lambda: tcp_bytes_received(proc.pid) >= 1000 * 256, 60, "1000 round trips", interval=0.05)
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0
    recs = records(out)
    assert recs[-1]["status"] == "interrupted"
    (res,) = client_results(recs)
    assert res["complete"] is False and res["verified"] is None and res["count"] > 100
    check_distribution(res)
    for child in children:
        assert not Path(f"/proc/{child}").exists(), f"peer {child} is still there"


@pytest.mark.functional
def test_vsock_runs_or_says_it_is_absent(probe):
    """Never a fake figure: either verified round trips over AF_VSOCK, or a warning."""
    recs = run_ipc(probe, "--transport", "vsock", "--sizes", "16", "--count", "100")
    warnings = [r for r in recs if r["type"] == "warning" and r["code"] == "transport_unavailable"]
    res = client_results(recs)
    assert (len(res), len(warnings)) in ((1, 0), (0, 1)), recs
    if res:
        assert res[0]["verified"] is True


@pytest.mark.functional
def test_connect_to_nobody_is_an_environment_error(probe):
    recs = run_ipc(probe, "--connect", "127.0.0.1:1", "--count", "1", expect_rc=3)
    assert recs[-1]["status"] == "error" and "127.0.0.1" in recs[-1]["error"]


@pytest.mark.parametrize("args", [
    ["--transport", "carrier-pigeon"], ["--sizes", "8"], ["--sizes", "32m"], ["--count", "0"],
    ["--count", "5", "--duration-s", "1"], ["--serve", "--connect", "127.0.0.1"], ["--connect", "[::1"],
    ["--connect", "127.0.0.1:70000"], ["--serve", "--transport", "pipe"], ["--serve", "--transport", "tcp,udp"],
    ["--port", "5000"], ["--cpus", "0,1,2"], ["--timeout-s", "-1"], ["--x-corrupt-reply", "x"], ["--nope"],
    ["stray"],
])
@pytest.mark.functional
def test_bad_options_exit_2_with_one_line_and_nothing_on_stdout(probe, args):
    assert_usage_error(probe, "ipc", args)


@pytest.mark.functional
def test_help_exits_0(probe):
    proc = subprocess.run([str(probe), "ipc", "--help"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0 and "--connect" in proc.stdout and "--serve" in proc.stdout
